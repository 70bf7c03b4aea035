// Softmax followed by cross-entropy against integer labels: the loss every model ends in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "reference_trainer/nn/tensor.h"

namespace gw::trainer {

class SoftmaxCrossEntropy {
 public:
  // logits [N, classes] (N >= 1, classes <= 256), labels[i] < classes. Returns the MEAN loss over
  // the batch and keeps the probabilities for backward(). Numerically stable: each row's maximum
  // is subtracted before exponentiating. Throws std::invalid_argument on a bad shape or label.
  float forward(const Tensor& logits, const std::uint8_t* labels);
  // The SUM of the per-sample losses of the last forward(), accumulated in double.
  double loss_sum() const { return loss_sum_; }
  // Gradient of the mean loss of the last forward(): (softmax - onehot) / N.
  void backward(Tensor& grad_logits) const;

  // Index of a row's largest value (the first on ties).
  static std::size_t argmax(const float* row, std::size_t n);
  // predictions[i] = argmax of logits row i.
  static void predict(const Tensor& logits, std::uint8_t* predictions);
  // How many rows' argmax equals the label.
  static std::int64_t count_correct(const Tensor& logits, const std::uint8_t* labels);

 private:
  Tensor probs_;
  std::vector<std::uint8_t> labels_;
  double loss_sum_ = 0.0;
};

}  // namespace gw::trainer
