// What the compressor did over the run so far, on this rank (DistributedOptimizer's
// CompressionStats), counted from the communicator's counters.
#pragma once

#include <cstdint>
#include <string>

#include "compressors/compressor.h"
#include "compressors/exchange_plan.h"

namespace gw {

struct CompressionStats {
  std::string compressor;
  std::int64_t warmup_end_step = 0;  // first step at the final sparsity (0: no warm-up)
  // Steps that exchanged gradients from warmup_end_step on (from the resume point, after
  // load_state); local SGD's local steps are not among them.
  std::int64_t steps_after_warmup = 0;
  // Gradient bytes this rank sent over those steps (communicator counters).
  std::uint64_t gradient_bytes_after_warmup = 0;
  // What one step of GRADWIRE_COMPRESSOR=none would send from this rank: the fp32 allreduce of
  // every gradient.
  std::uint64_t dense_bytes_per_step = 0;
  std::int64_t sparse_exchanges = 0;  // bucket exchanges that went sparse
  // Planned sparse, sent dense (Note [When sparse falls back to dense]).
  std::int64_t dense_fallbacks = 0;
};

class CompressionCounter {
 public:
  const CompressionStats& stats() const { return stats_; }
  void set_dense_bytes_per_step(std::uint64_t bytes) { stats_.dense_bytes_per_step = bytes; }
  // A compressor is installed at step `steps` (`name`: what the report calls it): per-step
  // figures count from its warm-up's end, or from here.
  void installed(const compressors::Compressor& compressor, const std::string& name,
                 std::int64_t steps);
  // The run resumed at step `steps`: per-step figures start at the resume point.
  void resumed(std::int64_t steps);
  // Whether the per-step figures start at step `step` (restart_bytes when its gradients begin).
  bool counts_from(std::int64_t step) const { return step == measure_from_; }
  // The bytes count from `sent` gradient bytes (the first counted step, or auto's choice).
  void restart_bytes(std::uint64_t sent) { bytes_at_start_ = sent; }
  // One bucket's exchange ran `plan`.
  void bucket_exchanged(const compressors::ExchangePlan& plan) {
    if (!plan.sparse.empty()) ++stats_.sparse_exchanges;
    if (plan.dense_fallback) ++stats_.dense_fallbacks;
  }
  // Step `step` exchanged its gradients; `sent`: gradient bytes sent so far.
  void step_exchanged(std::int64_t step, std::uint64_t sent) {
    if (step < measure_from_) return;
    ++stats_.steps_after_warmup;
    stats_.gradient_bytes_after_warmup = sent - bytes_at_start_;
  }

 private:
  CompressionStats stats_;
  std::int64_t measure_from_ = 0;  // per-step figures count from here
  std::uint64_t bytes_at_start_ = 0;
};

}  // namespace gw
