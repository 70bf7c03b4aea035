// The step's buckets as DistributedOptimizer keeps them: the plan, each bucket's view of the flat
// gradient buffer and its exchange, the event that marks its gradients written, the launch
// tracker, the order the engine ran their jobs in, and the span of the step's exchanges.
#pragma once

#include <cstddef>
#include <vector>

#include "compressors/bucket_view.h"
#include "fusion/bucket_plan.h"
#include "fusion/launch_tracker.h"
#include "kernels/stream.h"
#include "plugin/exchange/bucket_exchange.h"

namespace gw {

// The step's first exchange job's start and its last one's end, on the communication stream
// (DistributedOptimizer::last_exchange_ms): written by the engine's jobs, read once it is idle.
struct ExchangeSpan {
  kernels::Event begin, end;
  bool timed = false;
  double last_ms = 0;

  // The first exchange job of a step records begin; every one records end.
  void job_started(const kernels::Stream& stream) {
    if (!timed) begin.record(stream);
    timed = true;
  }
  void job_ended(const kernels::Stream& stream) { end.record(stream); }
  // Once the engine is idle (every job synchronised the stream): the span, or 0 without one.
  void close(bool exchanged) { last_ms = exchanged && timed ? end.elapsed_ms_since(begin) : 0.0; }
};

struct StepBuckets {
  fusion::BucketPlan plan;
  std::vector<compressors::BucketView> views;
  std::vector<BucketExchange> exchanges;
  std::vector<kernels::Event> ready;  // recorded on the program's stream at each release
  fusion::LaunchTracker tracker{fusion::BucketPlan{}};
  std::vector<std::size_t> run_order;  // of the last step that exchanged or checked gradients
  ExchangeSpan span;

  StepBuckets() = default;
  StepBuckets(fusion::BucketPlan p, std::vector<compressors::BucketView> v)
      : plan(std::move(p)),
        views(std::move(v)),
        exchanges(plan.size()),
        ready(plan.size()),
        tracker(plan) {
    run_order.reserve(2 * plan.size());
  }
  std::size_t size() const { return plan.size(); }
};

// What each parameter's gradient holds after the exchange, as a multiple of the sum over ranks,
// and what the inner optimizer must scale it by (See Note [Who divides by the world size],
// plugin/optimizer.h).
class GradientScale {
 public:
  GradientScale() = default;
  GradientScale(bool average, std::size_t parameters, int world_size)
      : average_(average), world_size_(world_size), multiplier_(parameters, 1.0f) {}

  bool average() const { return average_; }
  // 1/n (average) or 1 (sum): a gradient the inner optimizer can use as it is.
  float target() const { return average_ ? 1.0f / static_cast<float>(world_size_) : 1.0f; }
  void set(std::size_t parameter, float multiplier) { multiplier_[parameter] = multiplier; }
  // A local step: every gradient is this rank's own, as the inner optimizer uses it.
  void all_at_target() { multiplier_.assign(multiplier_.size(), target()); }
  // What the inner optimizer must multiply parameter i's gradient by.
  float needed(std::size_t i) const {
    return multiplier_[i] == target() ? 1.0f : target() / multiplier_[i];
  }

 private:
  bool average_ = true;
  int world_size_ = 1;
  std::vector<float> multiplier_;  // per parameter: 1 (sum) or 1/n (average)
};

}  // namespace gw
