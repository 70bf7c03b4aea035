#include "reference_trainer/nn/max_pool2d.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

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
  for (std::size_t p = 0; p < planes; ++p) {
    const float* x = in + p * h * w;
    float* y = out + p * oh_n * ow_n;
    for (std::size_t oh = 0; oh < oh_n; ++oh) {
      for (std::size_t ow = 0; ow < ow_n; ++ow) {
        std::size_t best = oh * kernel_ * w + ow * kernel_;
        for (std::size_t i = 0; i < kernel_; ++i) {
          for (std::size_t j = 0; j < kernel_; ++j) {
            const std::size_t at = (oh * kernel_ + i) * w + ow * kernel_ + j;
            if (x[at] > x[best]) best = at;
          }
        }
        const std::size_t o = oh * ow_n + ow;
        y[o] = x[best];
        if (training) argmax_[p * oh_n * ow_n + o] = static_cast<std::uint32_t>(best);
      }
    }
  }
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
  std::fill(dx, dx + input_shape_.numel(), 0.0f);
  const std::size_t plane_in = input_shape_[2] * input_shape_[3];
  const std::size_t plane_out = output_shape_[2] * output_shape_[3];
  for (std::size_t o = 0; o < grad_output.numel(); ++o) {
    dx[(o / plane_out) * plane_in + argmax_[o]] += dy[o];
  }
  end_result(*grad_input);
}

}  // namespace gw::trainer
