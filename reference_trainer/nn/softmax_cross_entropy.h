// Softmax followed by cross-entropy against integer labels: the loss every model ends in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "amp/op_policy.h"
#include "kernels/half.h"
#include "reference_trainer/nn/tensor.h"

namespace gw::trainer {

class SoftmaxCrossEntropy {
 public:
  // The op name of mixed precision's lists.
  static constexpr const char* kOpName = "softmax_cross_entropy";

  // As Layer::set_op_policy: with a policy, forward() runs in the precision it decides (the
  // default lists deny this op fp16, as exp, log and the reduction over classes lose too much in
  // it). In fp16 the probabilities and each sample's loss are rounded to binary16 and the logits'
  // gradient is returned in fp16 (Note [CPU rendering of fp16 ops]).
  void set_op_policy(const amp::OpPolicy* policy);
  amp::Precision precision() const { return precision_; }

  // logits [N, classes] (N >= 1, classes <= 256; fp32 or fp16), labels[i] < classes. Returns the
  // MEAN loss over the batch and keeps the probabilities for backward(). Numerically stable: each
  // row's maximum is subtracted before exponentiating. Throws std::invalid_argument on a bad shape
  // or label.
  float forward(const Tensor& logits, const std::uint8_t* labels);
  // The SUM of the per-sample losses of the last forward(), accumulated in double.
  double loss_sum() const { return loss_sum_; }
  // Gradient of loss_scale times the mean loss of the last forward(): (softmax - onehot) / N *
  // loss_scale, in the op's dtype (in fp16 a value past 65504 becomes inf, the overflow that
  // dynamic loss scaling looks for).
  void backward(Tensor& grad_logits, float loss_scale = 1.0f);

  // Index of a row's largest value (the first on ties).
  static std::size_t argmax(const float* row, std::size_t n);
  // predictions[i] = argmax of logits row i (fp32 or fp16).
  static void predict(const Tensor& logits, std::uint8_t* predictions);
  // How many rows' argmax equals the label.
  static std::int64_t count_correct(const Tensor& logits, const std::uint8_t* labels);

 private:
  amp::Precision if_fp32_input_ = amp::Precision::kFloat32;
  amp::Precision if_fp16_input_ = amp::Precision::kFloat32;
  amp::Precision precision_ = amp::Precision::kFloat32;
  std::vector<float> logits_scratch_;
  std::vector<float> grad_scratch_;
  std::vector<Half> half_scratch_;
  Tensor probs_;  // fp32 (fp16-valued in an fp16 forward)
  std::vector<std::uint8_t> labels_;
  std::vector<float> sample_loss_;  // the last forward()'s loss of each sample
  double loss_sum_ = 0.0;
};

}  // namespace gw::trainer
