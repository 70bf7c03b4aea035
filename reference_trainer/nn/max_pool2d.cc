#include "reference_trainer/nn/max_pool2d.h"

#include <limits>
#include <stdexcept>

#include "kernels/nn.h"

namespace gw::trainer {

MaxPool2d::MaxPool2d(std::size_t kernel) : kernel_(kernel) {
  if (kernel == 0) throw std::invalid_argument("MaxPool2d: kernel must be positive");
}

std::string MaxPool2d::describe() const { return "MaxPool2d(" + std::to_string(kernel_) + ")"; }

void MaxPool2d::forward(const Tensor& input, Tensor& output, bool training) {
  const Shape& s = input.shape();
  if (s.rank() != 4 || s[2] < kernel_ || s[3] < kernel_ ||
      s[2] * s[3] > std::numeric_limits<std::uint32_t>::max()) {
    throw std::invalid_argument(describe() + ": expects input [N, C, H, W] with H, W >= " +
                                std::to_string(kernel_) + ", got " + s.to_string());
  }
  const std::size_t planes = s[0] * s[1];
  const std::size_t h = s[2];
  const std::size_t w = s[3];
  const std::size_t oh_n = h / kernel_;
  const std::size_t ow_n = w / kernel_;
  begin_forward(input);
  const float* in = input_view(input);
  const Shape out_shape{s[0], s[1], oh_n, ow_n};
  float* out = begin_result(output, out_shape);
  if (training) argmax_.resize(out_shape.numel());
  kernels::max_pool2d_forward(in, planes, h, w, kernel_, out, training ? argmax_.data() : nullptr,
                              kernels::Stream::host());
  end_result(output);
  input_shape_ = s;
  output_shape_ = out_shape;
  has_input_ = training;
}

void MaxPool2d::backward(const Tensor& grad_output, Tensor* grad_input) {
  require_forward_cache(has_input_);
  if (grad_output.shape() != output_shape_) {
    throw std::invalid_argument(describe() + ": grad_output " + grad_output.shape().to_string() +
                                " does not match the output " + output_shape_.to_string());
  }
  if (grad_input == nullptr) return;
  const float* dy = grad_view(grad_output);
  float* dx = begin_result(*grad_input, input_shape_);
  kernels::max_pool2d_backward(dy, argmax_.data(), input_shape_[0] * input_shape_[1],
                               input_shape_[2], input_shape_[3], kernel_, dx,
                               kernels::Stream::host());
  end_result(*grad_input);
}

}  // namespace gw::trainer
