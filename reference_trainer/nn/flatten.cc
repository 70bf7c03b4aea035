#include "reference_trainer/nn/flatten.h"

#include <algorithm>
#include <stdexcept>

namespace gw::trainer {

void Flatten::forward(const Tensor& input, Tensor& output, bool training) {
  if (input.shape().rank() < 2) {
    throw std::invalid_argument("Flatten: expects [N, ...], got " + input.shape().to_string());
  }
  const std::size_t n = input.dim(0);
  output.resize({n, input.shape().without_batch().numel()});
  std::copy(input.data(), input.data() + input.numel(), output.data());
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
  grad_input->resize(input_shape_);
  std::copy(grad_output.data(), grad_output.data() + grad_output.numel(), grad_input->data());
}

}  // namespace gw::trainer
