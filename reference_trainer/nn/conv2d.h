// A 2-D convolution (cross-correlation, as in PyTorch) over NCHW tensors, by im2col + GEMM.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "reference_trainer/nn/im2col.h"
#include "reference_trainer/nn/layer.h"

namespace gw::trainer {

class Conv2d final : public Layer {
 public:
  // Parameters: "weight" [out_channels, in_channels, kernel, kernel] (Kaiming uniform, fan_in =
  // in_channels * kernel^2), "bias" [out_channels] (zero).
  Conv2d(std::size_t in_channels, std::size_t out_channels, std::size_t kernel,
         std::size_t stride = 1, std::size_t padding = 0);

  std::string describe() const override;
  // input [N, in_channels, H, W] -> output [N, out_channels, OH, OW],
  // OH = (H + 2 padding - kernel) / stride + 1.
  void forward(const Tensor& input, Tensor& output, bool training) override;
  void backward(const Tensor& grad_output, Tensor* grad_input) override;
  const char* op_name() const override { return "conv2d"; }

  std::size_t in_channels() const { return in_channels_; }
  std::size_t out_channels() const { return out_channels_; }
  std::size_t kernel() const { return kernel_; }
  std::size_t stride() const { return stride_; }
  std::size_t padding() const { return padding_; }

 private:
  std::size_t in_channels_;
  std::size_t out_channels_;
  std::size_t kernel_;
  std::size_t stride_;
  std::size_t padding_;
  ConvGeometry geometry_;  // of the last forward()
  std::size_t batch_ = 0;
  // Training: every sample's column matrix, reused by the weight gradient, in the op's dtype.
  // Evaluation: one sample's, as scratch.
  Tensor cols_;
  std::vector<float> col_scratch_;  // fp16 op: one sample's column matrix in fp32
  Tensor grad_cols_;                // one sample's, scratch for the input gradient
  bool has_input_ = false;
};

}  // namespace gw::trainer
