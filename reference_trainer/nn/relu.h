// Rectified linear unit, element-wise on a tensor of any shape.
#pragma once

#include <string>

#include "reference_trainer/nn/layer.h"

namespace gw::trainer {

class ReLU final : public Layer {
 public:
  ReLU() = default;

  std::string describe() const override { return "ReLU"; }
  void forward(const Tensor& input, Tensor& output, bool training) override;
  // The gradient at exactly 0 is taken as 0 (as PyTorch does).
  void backward(const Tensor& grad_output, Tensor* grad_input) override;
  const char* op_name() const override { return "relu"; }

 private:
  Tensor input_;
  bool has_input_ = false;
};

}  // namespace gw::trainer
