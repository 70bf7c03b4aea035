// Flattens [N, ...] to [N, rest], e.g. between the convolutional and the dense part of a CNN.
#pragma once

#include <string>

#include "reference_trainer/nn/layer.h"

namespace gw::trainer {

class Flatten final : public Layer {
 public:
  Flatten() = default;

  std::string describe() const override { return "Flatten"; }
  void forward(const Tensor& input, Tensor& output, bool training) override;
  void backward(const Tensor& grad_output, Tensor* grad_input) override;
  const char* op_name() const override { return "flatten"; }

 private:
  Shape input_shape_;
  bool has_input_ = false;
};

}  // namespace gw::trainer
