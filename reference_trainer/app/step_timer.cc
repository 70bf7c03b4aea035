#include "reference_trainer/app/step_timer.h"

namespace gw::trainer {

void StepTimer::begin(std::int64_t step, const kernels::Stream& stream) {
  of(step).begin.record(stream);
}

void StepTimer::backward_done(std::int64_t step, const kernels::Stream& stream) {
  of(step).backward_end.record(stream);
  if (step > first_step_ + 1) {
    const Events& prev = of(step - 1);
    compute_ms_ += prev.backward_end.elapsed_ms_since(prev.begin);
    after_backward_ms_ += prev.end.elapsed_ms_since(prev.backward_end);
    ++timed_steps_;
  }
}

void StepTimer::end(std::int64_t step, const kernels::Stream& stream, double exchange_ms) {
  of(step).end.record(stream);
  if (step > first_step_) {
    exchange_ms_ += exchange_ms;
    ++exchange_steps_;
  }
}

void StepTimer::report(DeviceResult& device) const {
  device.timed_steps = timed_steps_;
  if (timed_steps_ > 0) {
    device.compute_ms_per_step = compute_ms_ / static_cast<double>(timed_steps_);
    device.after_backward_ms_per_step = after_backward_ms_ / static_cast<double>(timed_steps_);
  }
  if (exchange_steps_ > 0) {
    device.exchange_ms_per_step = exchange_ms_ / static_cast<double>(exchange_steps_);
  }
}

}  // namespace gw::trainer
