#include "reference_trainer/nn/relu.h"

#include <stdexcept>

#include "kernels/nn.h"

namespace gw::trainer {

void ReLU::forward(const Tensor& input, Tensor& output, bool training) {
  begin_forward(input);
  const float* x = input_view(input);
  float* y = begin_result(output, input.shape());
  const std::size_t n = input.numel();
  kernels::relu_forward(x, y, n, kernels::Stream::host());
  end_result(output);
  if (training) store(x, input.shape(), op_dtype(), input_);
  has_input_ = training;
}

void ReLU::backward(const Tensor& grad_output, Tensor* grad_input) {
  require_forward_cache(has_input_);
  if (grad_output.shape() != input_.shape()) {
    throw std::invalid_argument("ReLU: grad_output " + grad_output.shape().to_string() +
                                " does not match the input " + input_.shape().to_string());
  }
  if (grad_input == nullptr) return;
  const float* x = cache_view(input_);
  const float* dy = grad_view(grad_output);
  float* dx = begin_result(*grad_input, input_.shape());
  const std::size_t n = input_.numel();
  kernels::relu_backward(x, dy, dx, n, kernels::Stream::host());
  end_result(*grad_input);
}

}  // namespace gw::trainer
