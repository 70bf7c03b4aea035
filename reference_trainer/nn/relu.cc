#include "reference_trainer/nn/relu.h"

#include <algorithm>
#include <stdexcept>

namespace gw::trainer {

void ReLU::forward(const Tensor& input, Tensor& output, bool training) {
  output.resize(input.shape());
  const float* x = input.data();
  float* y = output.data();
  const std::size_t n = input.numel();
  for (std::size_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
  if (training) {
    input_.resize(input.shape());
    std::copy(x, x + n, input_.data());
  }
  has_input_ = training;
}

void ReLU::backward(const Tensor& grad_output, Tensor* grad_input) {
  require_forward_cache(has_input_);
  if (grad_output.shape() != input_.shape()) {
    throw std::invalid_argument("ReLU: grad_output " + grad_output.shape().to_string() +
                                " does not match the input " + input_.shape().to_string());
  }
  if (grad_input == nullptr) return;
  grad_input->resize(input_.shape());
  const float* x = input_.data();
  const float* dy = grad_output.data();
  float* dx = grad_input->data();
  const std::size_t n = input_.numel();
  for (std::size_t i = 0; i < n; ++i) dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
}

}  // namespace gw::trainer
