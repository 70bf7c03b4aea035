#include "plugin/sync_settings.h"

#include <string>

#include "compressors/kind.h"
#include "plugin/config/params.h"
#include "plugin/outer_optimizer.h"

namespace gw {

namespace keys = config::keys;
using sync_policies::SyncMode;

namespace {

bool is_set(const config::Config& config, const char* key) {
  return config.source(key) != config::Source::kDefault;
}

std::string setting(const config::Config& config, const char* key) {
  return std::string(key) + "=" + config.text(key);
}

// The values, unchecked.
SyncSettings read_values(const config::Config& config) {
  SyncSettings s;
  const std::string sync = config.get_string(keys::kSync);
  s.automatic = sync == "auto";
  s.policy.mode = s.automatic ? SyncMode::kEveryStep : sync_policies::parse_sync_mode(sync);
  s.policy.period = config.get_int(keys::kLocalSgdK);
  s.policy.begin_step = config.get_int(keys::kLocalSgdBeginStep);
  s.policy.initial_period = config.get_int(keys::kAdaptiveInitK);
  s.policy.max_period = config.get_int(keys::kAdaptiveMaxK);
  s.average_state = config.get_bool(keys::kLocalSgdAverageState);
  s.outer.rule = parse_outer_rule(config.get_string(keys::kOuterOptimizer));
  s.outer.lr = static_cast<float>(config.get_float(keys::kOuterLr));
  s.outer.momentum = static_cast<float>(config.get_float(keys::kOuterMomentum));
  if (s.outer.rule == kernels::OuterRule::kAverage) s.outer.momentum = 0.0f;
  s.streaming.fragments = config.get_int(keys::kDilocoFragments);
  s.streaming.delay = config.get_int(keys::kDilocoDelay);
  s.streaming.mixing = static_cast<float>(config.get_float(keys::kDilocoMixing));
  return s;
}

// GRADWIRE_SYNC=auto is one choice, of both the policy and the compressor.
void check_auto_chooses_both(const config::Config& config, const SyncSettings& s) {
  if (s.automatic && config.get_string(keys::kCompressor) != "auto") {
    throw config::ConfigError(setting(config, keys::kSync) + " lets " + keys::kCompressor +
                              "=auto choose local_sgd as well as a compressor, and " +
                              setting(config, keys::kCompressor) + " chooses nothing. Set " +
                              keys::kCompressor + "=auto, or name a " + keys::kSync);
  }
}

// Each local SGD parameter that is set must apply to the chosen policy.
void check_parameters_apply(const config::Config& config, const SyncSettings& s) {
  // Each local SGD parameter and the policies it applies to.
  struct Applies {
    const char* key;
    std::initializer_list<SyncMode> modes;
    const char* policies;
  };
  const Applies applies[] = {
      {keys::kLocalSgdK,
       {SyncMode::kLocalSgd, SyncMode::kPostLocalSgd, SyncMode::kDiloco},
       "local_sgd, post_local_sgd, diloco (its H) and auto (adaptive_local_sgd starts from "
       "GRADWIRE_ADAPTIVE_INIT_K)"},
      {keys::kLocalSgdBeginStep,
       {SyncMode::kPostLocalSgd, SyncMode::kAdaptiveLocalSgd},
       "post_local_sgd and adaptive_local_sgd (local_sgd is local from step 0)"},
      {keys::kAdaptiveInitK, {SyncMode::kAdaptiveLocalSgd}, "adaptive_local_sgd"},
      {keys::kAdaptiveMaxK, {SyncMode::kAdaptiveLocalSgd}, "adaptive_local_sgd"},
      {keys::kLocalSgdAverageState,
       {SyncMode::kLocalSgd, SyncMode::kPostLocalSgd, SyncMode::kAdaptiveLocalSgd,
        SyncMode::kDiloco},
       "local_sgd, post_local_sgd, adaptive_local_sgd, diloco and auto"},
      {keys::kOuterOptimizer, {SyncMode::kDiloco}, "diloco"},
      {keys::kOuterLr, {SyncMode::kDiloco}, "diloco"},
      {keys::kOuterMomentum, {SyncMode::kDiloco}, "diloco"},
      {keys::kDilocoFragments, {SyncMode::kDiloco}, "diloco"},
      {keys::kDilocoDelay, {SyncMode::kDiloco}, "diloco"},
      {keys::kDilocoMixing, {SyncMode::kDiloco}, "diloco"},
  };
  for (const Applies& a : applies) {
    bool applies_here = false;
    for (SyncMode m : a.modes) applies_here = applies_here || m == s.policy.mode;
    // auto's local_sgd candidate runs at GRADWIRE_LOCAL_SGD_K (and averages the state as set).
    if (s.automatic) {
      applies_here =
          applies_here || a.key == keys::kLocalSgdK || a.key == keys::kLocalSgdAverageState;
    }
    if (is_set(config, a.key) && !applies_here) {
      throw config::ConfigError(setting(config, a.key) + " has no effect under " +
                                setting(config, keys::kSync) + ": it applies to " + a.policies +
                                ". Set " + keys::kSync + " to one of those, or unset " + a.key);
    }
  }
}

// Streaming diloco's fragments, delay and mixing (Note [Streaming DiLoCo]).
void check_streaming(const config::Config& config, const SyncSettings& s) {
  const SyncSettings::Streaming& st = s.streaming;
  if (st.fragments == 0) {
    for (const char* key : {keys::kDilocoDelay, keys::kDilocoMixing}) {
      if (is_set(config, key)) {
        throw config::ConfigError(setting(config, key) + " applies to streaming diloco only; set " +
                                  keys::kDilocoFragments + " >= 1 (1 streams the whole model " +
                                  "as one fragment), or unset " + key);
      }
    }
    return;
  }
  if (s.average_state) {
    throw config::ConfigError(setting(config, keys::kLocalSgdAverageState) +
                              " cannot be combined " + "with " +
                              setting(config, keys::kDilocoFragments) +
                              ": the optimizer state is not cut into fragments. Unset one of them");
  }
  if (st.fragments > s.policy.period) {
    throw config::ConfigError(setting(config, keys::kDilocoFragments) + " exceeds " +
                              setting(config, keys::kLocalSgdK) +
                              ": each fragment takes its outer step at its own offset within the "
                              "H steps, so there can be at most H fragments");
  }
  if (st.delay >= s.policy.period) {
    throw config::ConfigError(setting(config, keys::kDilocoDelay) + " is not below " +
                              setting(config, keys::kLocalSgdK) +
                              ": a fragment's exchange must be applied before its next one "
                              "starts (0 <= tau < H)");
  }
}

// The periods and the switch step that the chosen policy needs.
void check_policy_parameters(const config::Config& config, const SyncSettings& s) {
  const SyncMode mode = s.policy.mode;
  if (mode == SyncMode::kPostLocalSgd && s.policy.begin_step < 1) {
    throw config::ConfigError(
        setting(config, keys::kSync) + " runs synchronous SGD until " + keys::kLocalSgdBeginStep +
        " and local SGD from there, so it needs that step (>= 1; Lin et al. switch at the first "
        "learning-rate decay); from step 0 on it would be " +
        keys::kSync + "=local_sgd");
  }
  if (mode == SyncMode::kDiloco && s.outer.rule == kernels::OuterRule::kAverage &&
      is_set(config, keys::kOuterMomentum)) {
    throw config::ConfigError(setting(config, keys::kOuterMomentum) + " has no effect under " +
                              setting(config, keys::kOuterOptimizer) +
                              ", which keeps no momentum; unset it, or set " +
                              keys::kOuterOptimizer + "=nesterov or heavy_ball");
  }
  if (mode == SyncMode::kDiloco) check_streaming(config, s);
  if (mode == SyncMode::kAdaptiveLocalSgd && s.policy.initial_period > s.policy.max_period) {
    throw config::ConfigError(setting(config, keys::kAdaptiveInitK) + " exceeds " +
                              setting(config, keys::kAdaptiveMaxK) +
                              "; the first period must be at most the longest");
  }
}

// diloco's pseudo-gradients go through the compressor (Note [DiLoCo]): not dgc, whose momentum
// correction would be a second momentum, nor auto.
void check_diloco_compressor(const config::Config& config) {
  const std::string compressor = config.get_string(keys::kCompressor);
  if (compressor == "dgc" || compressor == "auto") {
    throw config::ConfigError(
        setting(config, keys::kSync) + " cannot be combined with " +
        setting(config, keys::kCompressor) + ": " +
        (compressor == "dgc"
             ? std::string("dgc's momentum correction would be a second momentum on top of the "
                           "outer optimizer's")
             : std::string("auto chooses how gradients travel at every step, and diloco sends "
                           "pseudo-gradients at its outer steps")) +
        ". The pseudo-gradients go through none, fp16, topk (with error feedback: SparseLoCo's "
        "recipe) or powersgd");
  }
}

// A local policy averages parameters: no gradient compressor with state of its own across steps,
// and gradients averaged.
void check_local_policy_combinations(const config::Config& config, SyncMode mode) {
  const std::string current = setting(config, keys::kSync);
  const std::string compressor = config.get_string(keys::kCompressor);
  if (mode == SyncMode::kDiloco) check_diloco_compressor(config);
  if (compressor == "auto") {
    throw config::ConfigError(
        current + " cannot be combined with " + setting(config, keys::kCompressor) +
        ": auto chooses how gradients travel at every step, and local SGD exchanges parameters "
        "instead. Use " +
        keys::kCompressor +
        "=none or fp16 (fp16 sends the parameters as "
        "fp16 deltas)");
  }
  if (mode != SyncMode::kDiloco &&
      compressors::keeps_residuals(compressors::parse_kind(compressor))) {
    throw config::ConfigError(
        current + " cannot be combined with " + setting(config, keys::kCompressor) + ": " +
        compressor +
        " compresses gradient exchanges and keeps per-step residuals (and dgc the momentum), "
        "which local steps would leave stale. Local SGD averages parameters instead; with " +
        keys::kCompressor + "=fp16 it sends them as fp16 deltas. Use " + keys::kCompressor +
        "=none or fp16");
  }
  if (config.get_string(keys::kGradientReduction) == "sum") {
    throw config::ConfigError(
        current + " cannot be combined with " + setting(config, keys::kGradientReduction) +
        ": local steps use each rank's own gradient and parameter averaging averages, so a "
        "summed gradient would change the step size by the world size between synchronous "
        "and local steps. Use " +
        keys::kGradientReduction + "=average");
  }
}

}  // namespace

SyncSettings read_sync_settings(const config::Config& config) {
  const SyncSettings s = read_values(config);
  check_auto_chooses_both(config, s);
  check_parameters_apply(config, s);
  check_policy_parameters(config, s);
  if (s.policy.mode != SyncMode::kEveryStep) check_local_policy_combinations(config, s.policy.mode);
  return s;
}

SyncSettings SyncSettings::local_sgd() const {
  SyncSettings s = *this;
  s.automatic = false;
  s.policy.mode = SyncMode::kLocalSgd;
  s.policy.begin_step = 0;
  return s;
}

void check_sync_supports(const SyncSettings& settings, Optimizer& inner) {
  if (settings.average_state && !inner.state_buffers()) {
    throw config::ConfigError(std::string(keys::kLocalSgdAverageState) +
                              "=1 averages the inner optimizer's state, but " + inner.name() +
                              " does not expose it (Optimizer::state_buffers); set " +
                              keys::kLocalSgdAverageState + "=0 to keep it local");
  }
}

}  // namespace gw
