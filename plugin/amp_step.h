// AmpStep: what mixed precision adds to DistributedOptimizer's step: where the gradients are
// unscaled and checked, the one-flag vote on an overflow, and the loss scaler's update and logs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "amp/loss_scaler.h"
#include "compressors/bucket_view.h"
#include "compressors/kind.h"
#include "kernels/stream.h"
#include "plugin/amp_settings.h"
#include "plugin/comm/communicator.h"
#include "plugin/logger.h"

namespace gw {

// Note [Mixed precision in the step]
// Under GRADWIRE_AMP=1 the program multiplies its loss by loss_scale() before backward (the
// reference trainer scales the loss's gradient), so the gradients reach the flat buffer scaled,
// and fp16 ops' gradients that would flush to zero survive. The step then unscales them and
// checks them for inf and NaN in one fused pass per bucket (kernels::scale_and_check_finite), in
// one of two places, so that every rank reaches the same decision:
// - after the exchange, when it is a dense one of a stateless compressor (none, or fp16, which
//   GRADWIRE_AMP_COMM_FP16=1 makes of none): every rank then holds the same reduced bits, and an
//   inf or NaN on any rank is in everyone's sum, so no extra collective is needed. The 1/n of the
//   average stays where it always is (Note [Who divides by the world size]), so the pass has one
//   factor for the whole bucket. The scaled gradients travel on the fp16 wire, which is where
//   loss scaling keeps small values representable; a sum that leaves fp16's range is an overflow
//   like any other.
// - before the exchange, for topk, dgc and powersgd (their residuals and DGC's momentum
//   accumulate across steps, stay fp32 and must never hold a scaled or non-finite value) and on
//   local SGD's local steps (no exchange at all): each rank unscales and checks its own
//   gradient, then one max allreduce of a 4-byte flag (control traffic) makes the decision
//   common. On an overflow the exchange does not run.
// A step with an overflow anywhere is skipped on every rank: the inner optimizer does not run, so
// parameters and optimizer state are untouched, and the loss scaler backs off (amp::LossScaler).
// The step count, the sync policy's schedule and the compressor's warm-up still advance.

// The compressor the gradients travel with: GRADWIRE_AMP_COMM_FP16=1 makes none fp16 under AMP.
compressors::Kind gradient_compressor(compressors::Kind configured, const AmpSettings& amp);

class AmpStep {
 public:
  // `compressor`: what the gradients travel with (gradient_compressor()).
  AmpStep(AmpSettings settings, compressors::Kind compressor);

  bool enabled() const { return scaler_ != nullptr; }
  const AmpSettings& settings() const { return settings_; }
  float loss_scale() const { return scaler_ ? scaler_->scale() : 1.0f; }
  const amp::LossScaler* scaler() const { return scaler_.get(); }
  amp::LossScaler* scaler() { return scaler_.get(); }

  // Whether this step checks each rank's own gradients before the exchange (and votes): under
  // AMP, unless the step exchanges over a stateless dense wire.
  bool checks_before_exchange(bool exchanging) const {
    return enabled() && !(exchanging && stateless_dense_);
  }
  bool checks_after_exchange(bool exchanging) const {
    return enabled() && exchanging && stateless_dense_;
  }

  // Divides the bucket's gradients by the loss scale in one pass; true when all are finite.
  bool unscale_and_check(const compressors::BucketView& bucket,
                         const kernels::Stream& stream) const;
  // Max-allreduce of this rank's overflow flag (control traffic); true when any rank overflowed.
  static bool any_rank_overflowed(Communicator& comm, bool overflow);

  // After the step's decision: the scaler's update (skipped: the step overflowed somewhere), and
  // the log line of a skipped step (a warning once it keeps overflowing at the floor).
  void finish_step(std::int64_t step, bool skipped, const Logger& log);

  // "; mixed precision (...)" for the start-up line, or "" when off.
  std::string describe(const std::string& gradient_wire) const;

 private:
  AmpSettings settings_;
  bool stateless_dense_ = false;  // none or fp16: every rank reduces to the same bits
  std::unique_ptr<amp::LossScaler> scaler_;
};

}  // namespace gw
