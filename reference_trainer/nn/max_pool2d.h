// Non-overlapping max pooling over NCHW tensors (window = stride = kernel).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "reference_trainer/nn/layer.h"

namespace gw::trainer {

class MaxPool2d final : public Layer {
 public:
  explicit MaxPool2d(std::size_t kernel = 2);

  std::string describe() const override;
  // input [N, C, H, W] -> output [N, C, H / kernel, W / kernel] (a ragged edge is dropped). On
  // ties the first maximum in row-major window order wins, and only it receives the gradient.
  void forward(const Tensor& input, Tensor& output, bool training) override;
  void backward(const Tensor& grad_output, Tensor* grad_input) override;
  const char* op_name() const override { return "max_pool2d"; }
  std::size_t kernel() const { return kernel_; }

 private:
  std::size_t kernel_;
  Shape input_shape_;
  Shape output_shape_;
  std::vector<std::uint32_t> argmax_;  // per output element: offset of the max within its plane
  bool has_input_ = false;
};

}  // namespace gw::trainer
