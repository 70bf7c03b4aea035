// How a step's time splits on the model's stream (Note [The trainer on a device]): forward and
// backward, then the rest of the step, and the exchange's span on the communication stream.
#pragma once

#include <cstdint>

#include "kernels/stream.h"
#include "reference_trainer/app/train_result.h"

namespace gw::trainer {

// Events on the model's stream around each step, read one step late, when the next step's
// train_step has waited for the stream anyway, so that timing adds no wait. The first step of
// this process (allocations, cuDNN's and cuBLAS's set-up) is not timed.
class StepTimer {
 public:
  // `first_step`: this process's first step (a resumed run's checkpoint step, else 0).
  explicit StepTimer(std::int64_t first_step = 0) : first_step_(first_step) {}

  // Step `step` starts on `stream`.
  void begin(std::int64_t step, const kernels::Stream& stream);
  // Its backward has been enqueued; the step before is complete and is counted.
  void backward_done(std::int64_t step, const kernels::Stream& stream);
  // Its update has been enqueued; `exchange_ms` is the optimizer's exchange span of it.
  void end(std::int64_t step, const kernels::Stream& stream, double exchange_ms);

  // The means over the timed steps into `device`.
  void report(DeviceResult& device) const;

 private:
  struct Events {
    kernels::Event begin, backward_end, end;
  };
  Events& of(std::int64_t step) { return events_[step % 2]; }

  std::int64_t first_step_;
  Events events_[2];
  double compute_ms_ = 0, after_backward_ms_ = 0, exchange_ms_ = 0;
  std::int64_t timed_steps_ = 0, exchange_steps_ = 0;
};

}  // namespace gw::trainer
