#include "reference_trainer/nn/flatten.h"

#include <algorithm>
#include <stdexcept>

namespace gw::trainer {

void Flatten::forward(const Tensor& input, Tensor& output, bool training) {
  if (input.shape().rank() < 2) {
    throw std::invalid_argument("Flatten: expects [N, ...], got " + input.shape().to_string());
  }
  begin_forward(input);
  const std::size_t n = input.dim(0);
  const float* x = input_view(input);
  float* y = begin_result(output, {n, input.shape().without_batch().numel()});
  std::copy(x, x + input.numel(), y);
  end_result(output);
  input_shape_ = input.shape();
  has_input_ = training;
}

void Flatten::backward(const Tensor& grad_output, Tensor* grad_input) {
  require_forward_cache(has_input_);
  if (grad_output.numel() != input_shape_.numel()) {
    throw std::invalid_argument("Flatten: grad_output " + grad_output.shape().to_string() +
                                " does not match the input " + input_shape_.to_string());
  }
  if (grad_input == nullptr) return;
  const float* dy = grad_view(grad_output);
  float* dx = begin_result(*grad_input, input_shape_);
  std::copy(dy, dy + grad_output.numel(), dx);
  end_result(*grad_input);
}

}  // namespace gw::trainer
