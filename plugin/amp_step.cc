#include "plugin/amp_step.h"

#include "kernels/elementwise.h"

namespace gw {

compressors::Kind gradient_compressor(compressors::Kind configured, const AmpSettings& amp) {
  if (amp.enabled && amp.comm_fp16 && configured == compressors::Kind::kNone) {
    return compressors::Kind::kFp16;
  }
  return configured;
}

AmpStep::AmpStep(AmpSettings settings, compressors::Kind compressor)
    : settings_(std::move(settings)) {
  if (!settings_.enabled) return;
  stateless_dense_ = !compressors::keeps_residuals(compressor);
  scaler_ = std::make_unique<amp::LossScaler>(settings_.scaler);
}

bool AmpStep::unscale_and_check(const compressors::BucketView& bucket,
                                const kernels::Stream& stream) const {
  // The 1/n of the average stays with the optimizer's multipliers, so one factor covers the
  // whole bucket (Note [Who divides by the world size]).
  return kernels::scale_and_check_finite(bucket.data, 1.0f / scaler_->scale(), bucket.numel,
                                         stream);
}

bool AmpStep::any_rank_overflowed(Communicator& comm, bool overflow) {
  std::int32_t flag = overflow ? 1 : 0;
  comm.allreduce(&flag, 1, DataType::kInt32, ReduceOp::kMax, TrafficKind::kControl);
  return flag != 0;
}

void AmpStep::finish_step(std::int64_t step, bool skipped, const Logger& log) {
  if (!scaler_) return;
  const float scale = scaler_->scale();
  scaler_->update(step, skipped);
  if (!skipped) return;
  // A run that keeps overflowing at the floor has diverged (the nan is not the scale's).
  const bool stuck = scaler_->at_floor() && scaler_->consecutive_skips() > 1;
  const LogLevel level = stuck ? LogLevel::kWarn : LogLevel::kDebug;
  if (!log.enabled(level)) return;
  log.log(level,
          "step %lld: gradients overflowed at loss scale %g on some rank; step skipped on every "
          "rank, loss scale now %g%s",
          static_cast<long long>(step), static_cast<double>(scale),
          static_cast<double>(scaler_->scale()),
          stuck ? (" (the floor, " + std::to_string(scaler_->consecutive_skips()) +
                   " overflowing steps in a row: the loss or the gradients are not finite at any "
                   "scale)")
                      .c_str()
                : "");
}

std::string AmpStep::describe(const std::string& gradient_wire) const {
  if (!scaler_) return "";
  return "; mixed precision (" + settings_.ops.describe() + "; loss scale " +
         std::to_string(scaler_->scale()) + (settings_.scaler.dynamic ? ", dynamic" : ", static") +
         "; gradient wire " + gradient_wire + ")";
}

}  // namespace gw
