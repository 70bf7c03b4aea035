// At start, ranks compare a hash of their effective configuration (and of anything else that must
// agree, such as the parameter layout); a mismatch is a ConfigError on every rank that names the
// differing keys and the ranks' values, never a hang.
#pragma once

#include <string>

#include "plugin/comm/communicator.h"

namespace gw {

// `canonical` is "KEY=value\n" lines. Collective: every rank of `comm` must call it. Throws
// config::ConfigError on every rank when any rank's text differs.
void check_same_on_all_ranks(Communicator& comm, const std::string& canonical);

}  // namespace gw
