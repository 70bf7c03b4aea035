#include "plugin/gradient_accumulation.h"

#include "kernels/elementwise.h"

namespace gw {

GradientAccumulation::GradientAccumulation(int passes, bool average, std::size_t numel,
                                           const kernels::Stream& stream)
    : passes_(passes), multiplier_(average ? 1.0f / static_cast<float>(passes) : 1.0f) {
  if (passes > 1) sum_ = kernels::Buffer<float>(numel, stream);
}

void GradientAccumulation::fold(float* grad, std::size_t offset, std::size_t n,
                                const kernels::Stream& stream) {
  if (!on()) return;
  float* sum = sum_.data() + offset;
  if (pass_ == 0) {
    kernels::copy_bytes(sum, grad, n * sizeof(float), stream);
  } else if (!last()) {
    kernels::axpy(1.0f, grad, sum, n, stream);
  } else {
    kernels::axpy(1.0f, sum, grad, n, stream);
    if (multiplier_ != 1.0f) kernels::scale(grad, multiplier_, n, stream);
  }
}

void GradientAccumulation::step_ended() {
  pass_ = 0;
  loss_sum_ = 0;
  losses_ = 0;
}

double GradientAccumulation::add_loss(double loss) {
  loss_sum_ += loss;
  ++losses_;
  return loss_sum_ / losses_;
}

std::string GradientAccumulation::where() const {
  return "backward pass " + std::to_string(pass_ + 1) + " of " + std::to_string(passes_) +
         " (GRADWIRE_ACCUMULATION_STEPS)";
}

}  // namespace gw
