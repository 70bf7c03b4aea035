#include "plugin/compressor_factory.h"

#include <algorithm>
#include <stdexcept>

#include "compressors/dgc_compressor.h"
#include "compressors/fp16_compressor.h"
#include "compressors/none_compressor.h"
#include "compressors/topk_compressor.h"
#include "plugin/config/params.h"

namespace gw {

CompressorSettings read_compressor_settings(const config::Config& config) {
  namespace keys = config::keys;
  CompressorSettings s;
  const std::string& compressor = config.get_string(keys::kCompressor);
  s.automatic = compressor == "auto";
  // GRADWIRE_AUTO_* steer auto's choice only: set without it, they are refused as every setting
  // that has no effect under the chosen strategy is (AMP's without GRADWIRE_AMP, local SGD's
  // under another GRADWIRE_SYNC).
  if (!s.automatic && config.get_string(keys::kSync) != "auto") {
    for (const char* key : {keys::kAutoCandidates, keys::kAutoMaxAccuracyDrop,
                            keys::kAutoAccuracyFile, keys::kAutoCheckSteps}) {
      if (config.source(key) != config::Source::kDefault) {
        throw config::ConfigError(std::string(key) + "=" + config.text(key) +
                                  " has no effect without auto: set " + keys::kCompressor +
                                  "=auto (or " + keys::kSync + "=auto), or unset " + key);
      }
    }
  }
  s.kind = s.automatic ? compressors::Kind::kNone : compressors::parse_kind(compressor);
  s.sparsify.sparsity = config.get_float_list(keys::kDgcSparsity);
  s.sparsify.rampup_begin_step = config.get_int(keys::kDgcRampupBeginStep);
  s.sparsify.rampup_steps = config.get_int(keys::kDgcRampupSteps);
  s.sparsify.sample_ratio = config.get_float(keys::kDgcSampleRatio);
  const std::string wire = config.get_string(keys::kSparseWire);
  using Wire = compressors::SparseWire;
  s.sparsify.wire = wire == "compact"    ? Wire::kCompact
                    : wire == "compact4" ? Wire::kCompact4
                    : wire == "compact2" ? Wire::kCompact2
                                         : Wire::kPairs;
  s.sparsify.min_numel = static_cast<std::size_t>(config.get_int(keys::kDgcMinNumel));
  s.sparsify.min_k = static_cast<std::size_t>(config.get_int(keys::kDgcMinK));
  const std::string algo = config.get_string(keys::kSparseAlgo);
  using Algo = compressors::SparsifyOptions::Algo;
  s.sparsify.algo = algo == "split"       ? Algo::kSplit
                    : algo == "allgather" ? Algo::kAllgather
                    : algo == "padded"    ? Algo::kPadded
                                          : Algo::kAuto;
  s.powersgd.rank = static_cast<std::size_t>(config.get_int(keys::kPowerSgdRank));
  s.powersgd.start_step = config.get_int(keys::kPowerSgdStartStep);
  s.momentum_masking = config.get_bool(keys::kDgcMomentumMasking);
  s.clip_norm = config.get_float(keys::kDgcClipNorm);
  const std::size_t values = s.sparsify.sparsity.size();
  if (compressors::is_sparse(s.kind) && values > 1 &&
      s.sparsify.rampup_steps < static_cast<std::int64_t>(values)) {
    throw config::ConfigError(
        std::string(keys::kDgcSparsity) + "=" + config.text(keys::kDgcSparsity) + " lists " +
        std::to_string(values) + " sparsities, spread over " + keys::kDgcRampupSteps + "=" +
        config.text(keys::kDgcRampupSteps) + " steps; set " + keys::kDgcRampupSteps +
        " to at least " + std::to_string(values) + " (each value needs a step) or give one value");
  }
  return s;
}

void check_compressor_supports(const CompressorSettings& settings, const Optimizer& inner) {
  if (settings.kind == compressors::Kind::kDgc && !inner.sgd_momentum()) {
    throw config::ConfigError(std::string(config::keys::kCompressor) +
                              "=dgc applies momentum correction in place of the inner "
                              "optimizer's momentum, so it needs an SGD optimizer; " +
                              inner.name() + " has no SGD momentum. Use " +
                              config::keys::kCompressor +
                              "=topk (top-k with error feedback, any optimizer) instead");
  }
}

namespace {

std::unique_ptr<compressors::Compressor> build(const CompressorSettings& settings,
                                               std::vector<std::size_t> numels,
                                               std::vector<std::size_t> rows,
                                               const std::optional<SgdMomentum>& momentum) {
  using compressors::Kind;
  switch (settings.kind) {
    case Kind::kNone:
      break;
    case Kind::kFp16:
      return std::make_unique<compressors::Fp16Compressor>();
    case Kind::kPowerSgd:
      if (std::all_of(rows.begin(), rows.end(), [](std::size_t r) { return r == 0; })) {
        throw config::ConfigError(
            std::string(config::keys::kCompressor) +
            "=powersgd sends matrix-shaped gradients as low-rank factors, but no parameter was "
            "registered with its rows (ParameterSpec::rows: a linear layer's outputs, a "
            "convolution's output channels), so every gradient would go whole. Set rows for the "
            "weights, or use " +
            config::keys::kCompressor + "=dgc or topk, which need no shapes");
      }
      return std::make_unique<compressors::PowerSgdCompressor>(numels, rows, settings.powersgd);
    case Kind::kTopk:
      return std::make_unique<compressors::TopkCompressor>(std::move(numels), settings.sparsify);
    case Kind::kDgc: {
      if (!momentum) throw std::logic_error("make_compressor: dgc without SGD momentum");
      compressors::DgcOptions d;
      d.sparsify = settings.sparsify;
      d.momentum = momentum->momentum;
      d.nesterov = momentum->nesterov;
      d.momentum_masking = settings.momentum_masking;
      d.clip_norm = settings.clip_norm;
      return std::make_unique<compressors::DgcCompressor>(std::move(numels), d);
    }
  }
  return std::make_unique<compressors::NoneCompressor>();
}

}  // namespace

std::unique_ptr<compressors::Compressor> make_trial_compressor(
    const CompressorSettings& settings, std::vector<std::size_t> numels,
    std::vector<std::size_t> rows, const std::optional<SgdMomentum>& momentum) {
  return build(settings, std::move(numels), std::move(rows), momentum);
}

std::unique_ptr<compressors::Compressor> make_compressor(const CompressorSettings& settings,
                                                         std::vector<std::size_t> numels,
                                                         std::vector<std::size_t> rows,
                                                         Optimizer& inner) {
  check_compressor_supports(settings, inner);
  auto c = build(settings, std::move(numels), std::move(rows), inner.sgd_momentum());
  // dgc applies the momentum itself: only once the compressor exists, so nothing is lost on an
  // error.
  if (settings.kind == compressors::Kind::kDgc) inner.release_momentum();
  return c;
}

std::unique_ptr<compressors::Compressor> make_averaging_wire(const CompressorSettings& settings,
                                                             sync_policies::SyncMode mode,
                                                             std::vector<std::size_t> numels,
                                                             std::vector<std::size_t> rows,
                                                             Optimizer& inner) {
  if (mode == sync_policies::SyncMode::kDiloco) {
    if (settings.kind == compressors::Kind::kDgc || settings.automatic) {
      throw std::logic_error("make_averaging_wire: diloco takes none, fp16, topk or powersgd");
    }
    return make_compressor(settings, std::move(numels), std::move(rows), inner);
  }
  if (settings.kind == compressors::Kind::kFp16) {
    return std::make_unique<compressors::Fp16Compressor>();
  }
  return std::make_unique<compressors::NoneCompressor>();
}

}  // namespace gw
