// The configuration behind gradwire.torch's objects: the GRADWIRE_* variables of the process's
// environment, then the keyword arguments of the Python call over them (a keyword wins), each
// through gradwire's registry (plugin/config/), so a bad value is the same ConfigError as under
// gradwire's own optimizer.
#pragma once

#include <map>
#include <string>

#include "plugin/config/config.h"

namespace gw::torch_bridge {

config::Config settings_config(const std::map<std::string, std::string>& settings);

}  // namespace gw::torch_bridge
