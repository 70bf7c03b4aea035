// Builds the Compressor that GRADWIRE_COMPRESSOR names, from the configuration.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compressors/compressor.h"
#include "compressors/kind.h"
#include "compressors/powersgd_compressor.h"
#include "compressors/sparsifying_compressor.h"
#include "plugin/config/config.h"
#include "plugin/optimizer.h"
#include "sync_policies/sync_policy.h"

namespace gw {

struct CompressorSettings {
  compressors::Kind kind = compressors::Kind::kNone;
  // GRADWIRE_COMPRESSOR=auto: `kind` is chosen at the first step (plugin/auto/auto_strategy.h);
  // until then it is kNone.
  bool automatic = false;
  compressors::SparsifyOptions sparsify;
  compressors::PowerSgdOptions powersgd;
  bool momentum_masking = true;
  double clip_norm = 0.0;
};

// Reads and cross-checks the compressor's GRADWIRE_* parameters; throws config::ConfigError naming
// the variables (for example a sparsity list longer than GRADWIRE_DGC_RAMPUP_STEPS).
CompressorSettings read_compressor_settings(const config::Config& config);

// Throws config::ConfigError when the compressor cannot run under `inner`: dgc needs an
// optimizer of the SGD form (Optimizer::sgd_momentum), and suggests topk otherwise.
void check_compressor_supports(const CompressorSettings& settings, const Optimizer& inner);

// A compressor of `settings.kind` that does not touch an inner optimizer: dgc takes `momentum` (its
// SGD momentum) instead of taking over the optimizer's; for auto's trial encodes.
std::unique_ptr<compressors::Compressor> make_trial_compressor(
    const CompressorSettings& settings, std::vector<std::size_t> numels,
    std::vector<std::size_t> rows, const std::optional<SgdMomentum>& momentum);

// numels and rows: every parameter's element count and rows (ParameterSpec::rows), in
// registration order. For dgc this takes over the inner optimizer's momentum
// (Optimizer::release_momentum).
std::unique_ptr<compressors::Compressor> make_compressor(const CompressorSettings& settings,
                                                         std::vector<std::size_t> numels,
                                                         std::vector<std::size_t> rows,
                                                         Optimizer& inner);

// How local SGD's parameters travel (LocalSgdAveraging): under diloco the compressor `settings`
// names (none, fp16, topk or powersgd; read_sync_settings refused the others); under the other
// policies fp16 when `settings` names it, none otherwise.
std::unique_ptr<compressors::Compressor> make_averaging_wire(const CompressorSettings& settings,
                                                             sync_policies::SyncMode mode,
                                                             std::vector<std::size_t> numels,
                                                             std::vector<std::size_t> rows,
                                                             Optimizer& inner);

}  // namespace gw
