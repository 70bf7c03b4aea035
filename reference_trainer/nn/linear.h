// A fully connected layer: y = x W^T + b, with W stored [out, in] as in PyTorch.
#pragma once

#include <cstddef>
#include <string>

#include "reference_trainer/nn/layer.h"

namespace gw::trainer {

class Linear final : public Layer {
 public:
  // Parameters: "weight" [out, in] (Kaiming uniform), "bias" [out] (zero).
  Linear(std::size_t in_features, std::size_t out_features);

  std::string describe() const override;
  // input [N, in] -> output [N, out].
  void forward(const Tensor& input, Tensor& output, bool training) override;
  void backward(const Tensor& grad_output, Tensor* grad_input) override;
  const char* op_name() const override { return "linear"; }

  std::size_t in_features() const { return in_; }
  std::size_t out_features() const { return out_; }

 private:
  std::size_t in_;
  std::size_t out_;
  Tensor input_;  // the weight gradient needs it (in the op's dtype)
  bool has_input_ = false;
};

}  // namespace gw::trainer
