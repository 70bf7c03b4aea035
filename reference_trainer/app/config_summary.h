// What rank 0 says about the GRADWIRE_* configuration at the start of a run.
#pragma once

#include <string>

#include "plugin/config/config.h"

namespace gw::trainer {

// Note [The configuration at the start of a run]
// Every parameter is a table of dozens of lines, most of them defaults: too long to head every
// log. At GRADWIRE_LOG_LEVEL=info the run says in one line what was set (in the environment or by
// the program), and where to see the rest; at debug it prints the whole table, as --print-config
// does; at warn and error, nothing.

// One line, with its '\n': "gradwire configuration (4 ranks): GRADWIRE_COMPRESSOR=dgc (everything
// else default; ...)", or "...: all defaults (...)". A value that is empty or holds a space is
// quoted ('').
std::string config_summary_line(const config::Config& config, int ranks);

// The header line and Config::table(): every parameter, its value and where it came from.
std::string config_full_table(const config::Config& config, int ranks);

}  // namespace gw::trainer
