#include "plugin/amp_settings.h"

#include <stdexcept>
#include <string>

#include "plugin/config/params.h"

namespace gw {

namespace keys = config::keys;

AmpSettings read_amp_settings(const config::Config& config, const amp::OpPolicy& base) {
  AmpSettings s;
  s.enabled = config.get_bool(keys::kAmp);
  s.comm_fp16 = config.get_bool(keys::kAmpCommFp16);
  const char* parameters[] = {keys::kAmpAllow,          keys::kAmpDeny,
                              keys::kAmpInitScale,      keys::kAmpGrowthInterval,
                              keys::kAmpGrowthFactor,   keys::kAmpBackoffFactor,
                              keys::kAmpMinScale,       keys::kAmpDynamic,
                              keys::kAmpCommFp16};
  if (!s.enabled) {
    for (const char* key : parameters) {
      if (config.source(key) != config::Source::kDefault) {
        throw config::ConfigError(std::string(key) + "=" + config.text(key) +
                                  " has no effect without mixed precision: set " + keys::kAmp +
                                  "=1, or unset " + key);
      }
    }
  }
  s.ops = base;
  s.scaler.init_scale = static_cast<float>(config.get_float(keys::kAmpInitScale));
  s.scaler.growth_interval = config.get_int(keys::kAmpGrowthInterval);
  s.scaler.growth_factor = static_cast<float>(config.get_float(keys::kAmpGrowthFactor));
  s.scaler.backoff_factor = static_cast<float>(config.get_float(keys::kAmpBackoffFactor));
  s.scaler.min_scale = static_cast<float>(config.get_float(keys::kAmpMinScale));
  s.scaler.dynamic = config.get_bool(keys::kAmpDynamic);
  try {
    s.ops.apply_overrides(config.get_string(keys::kAmpAllow), config.get_string(keys::kAmpDeny),
                          keys::kAmpAllow, keys::kAmpDeny);
    amp::validate(s.scaler);
  } catch (const std::invalid_argument& e) {
    throw config::ConfigError(e.what());
  }
  return s;
}

}  // namespace gw
