#include "reference_trainer/nn/linear.h"

#include <stdexcept>

#include "kernels/nn.h"
#include "reference_trainer/nn/gemm.h"

namespace gw::trainer {

Linear::Linear(std::size_t in_features, std::size_t out_features)
    : in_(in_features), out_(out_features) {
  if (in_ == 0 || out_ == 0) throw std::invalid_argument("Linear: sizes must be positive");
  add_parameter("weight", out_ * in_, in_, ParameterInit::kKaimingUniform, out_);
  add_parameter("bias", out_, in_, ParameterInit::kZero);
}

std::string Linear::describe() const {
  return "Linear(" + std::to_string(in_) + "->" + std::to_string(out_) + ")";
}

void Linear::forward(const Tensor& input, Tensor& output, bool training) {
  if (input.shape().rank() != 2 || input.dim(1) != in_) {
    throw std::invalid_argument(describe() + ": expects input [N, " + std::to_string(in_) +
                                "], got " + input.shape().to_string());
  }
  begin_forward(input);
  const std::size_t n = input.dim(0);
  const float* x = input_view(input);
  const float* w = op_value(0);
  const float* b = op_value(1);
  float* y = begin_result(output, {n, out_});
  kernels::broadcast_rows(b, n, out_, y, kernels::Stream::host());
  gemm(false, true, n, out_, in_, 1.0f, x, in_, w, in_, 1.0f, y, out_);
  end_result(output);
  if (training) store(x, input.shape(), op_dtype(), input_);
  has_input_ = training;
}

void Linear::backward(const Tensor& grad_output, Tensor* grad_input) {
  require_forward_cache(has_input_);
  const std::size_t n = input_.dim(0);
  if (grad_output.shape() != Shape{n, out_}) {
    throw std::invalid_argument(describe() + ": grad_output " + grad_output.shape().to_string() +
                                " does not match the output [" + std::to_string(n) + ", " +
                                std::to_string(out_) + "]");
  }
  const float* dy = grad_view(grad_output);
  // dW [out, in] = dy^T [out, N] * x [N, in]
  gemm(true, false, out_, in_, n, 1.0f, dy, out_, cache_view(input_), in_, 0.0f, grad(0), in_);
  // db = column sum of dy
  kernels::bias_grad(dy, n, out_, grad(1), kernels::Stream::host());
  finish_gradient(0);
  finish_gradient(1);
  if (grad_input != nullptr) {
    // dx [N, in] = dy [N, out] * W [out, in]
    float* dx = begin_result(*grad_input, {n, in_});
    gemm(false, false, n, in_, out_, 1.0f, dy, out_, op_value(0), in_, 0.0f, dx, in_);
    end_result(*grad_input);
  }
}

}  // namespace gw::trainer
