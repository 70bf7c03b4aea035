#include "settings.h"

namespace gw::torch_bridge {

config::Config settings_config(const std::map<std::string, std::string>& settings) {
  config::Config c = config::Config::from_environment();
  for (const auto& [key, value] : settings) c.set(key, value);
  return c;
}

}  // namespace gw::torch_bridge
