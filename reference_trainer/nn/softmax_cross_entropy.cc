#include "reference_trainer/nn/softmax_cross_entropy.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/elementwise.h"
#include "kernels/nn.h"
#include "reference_trainer/nn/precision.h"

namespace gw::trainer {
namespace {

void check_logits(const Tensor& logits, const char* who) {
  const Shape& s = logits.shape();
  if (s.rank() != 2 || s[0] == 0 || s[1] == 0 || s[1] > 256) {
    throw std::invalid_argument(std::string("SoftmaxCrossEntropy::") + who +
                                ": expects logits [N >= 1, 1 <= classes <= 256], got " +
                                s.to_string());
  }
}

// Row r of logits in fp32 (converted into `row` when the logits are fp16).
const float* logits_row(const Tensor& logits, std::size_t r, float* row) {
  const std::size_t classes = logits.dim(1);
  if (logits.dtype() == DType::kFloat32) return logits.data() + r * classes;
  kernels::cast_fp16_to_fp32(logits.half_data() + r * classes, row, classes,
                             kernels::Stream::host());
  return row;
}

}  // namespace

void SoftmaxCrossEntropy::set_op_policy(const amp::OpPolicy* policy) {
  if (policy != nullptr) {
    if_fp32_input_ = policy->decide(kOpName, /*any_input_fp32=*/true);
    if_fp16_input_ = policy->decide(kOpName, /*any_input_fp32=*/false);
  } else {
    if_fp32_input_ = if_fp16_input_ = amp::Precision::kFloat32;
  }
}

float SoftmaxCrossEntropy::forward(const Tensor& logits_in, const std::uint8_t* labels) {
  check_logits(logits_in, "forward");
  precision_ = logits_in.dtype() == DType::kFloat32 ? if_fp32_input_ : if_fp16_input_;
  const bool half = precision_ == amp::Precision::kFloat16;
  // The logits as this op reads them, as an fp32 tensor of the same shape.
  const float* z_all = op_view(logits_in, precision_, logits_scratch_, half_scratch_);
  const Tensor& logits = logits_in;
  const std::size_t n = logits.dim(0);
  const std::size_t classes = logits.dim(1);
  const std::size_t bad = kernels::first_bad_label(labels, n, classes, kernels::Stream::host());
  if (bad < n) {
    throw std::invalid_argument("SoftmaxCrossEntropy: label " + std::to_string(labels[bad]) +
                                " of sample " + std::to_string(bad) + " is not below " +
                                std::to_string(classes) + " classes");
  }
  probs_.resize(logits.shape());
  labels_.assign(labels, labels + n);
  sample_loss_.resize(n);
  kernels::softmax_cross_entropy_forward(z_all, labels, n, classes, probs_.data(),
                                         sample_loss_.data(), kernels::Stream::host());
  // The batch's sum in double, in sample order (the per-sample losses rounded to binary16 first
  // in an fp16 op).
  const double sum = sum_sample_losses(sample_loss_.data(), sample_loss_.size(), half);
  if (half) round_through_half(probs_.data(), probs_.numel(), half_scratch_);
  loss_sum_ = sum;
  return static_cast<float>(sum / static_cast<double>(n));
}

void SoftmaxCrossEntropy::backward(Tensor& grad_logits, float loss_scale) {
  if (labels_.empty()) {
    throw std::logic_error("SoftmaxCrossEntropy: backward() without a forward() before it");
  }
  const std::size_t n = probs_.dim(0);
  const std::size_t classes = probs_.dim(1);
  const float scale = loss_scale / static_cast<float>(n);
  const bool half = precision_ == amp::Precision::kFloat16;
  float* g;
  if (half) {
    grad_scratch_.resize(probs_.numel());
    g = grad_scratch_.data();
  } else {
    grad_logits.resize(probs_.shape(), DType::kFloat32);
    g = grad_logits.data();
  }
  kernels::softmax_cross_entropy_backward(probs_.data(), labels_.data(), n, classes, scale, g,
                                          kernels::Stream::host());
  if (half) store(g, probs_.shape(), DType::kFloat16, grad_logits);
}

std::size_t SoftmaxCrossEntropy::argmax(const float* row, std::size_t n) {
  return static_cast<std::size_t>(std::max_element(row, row + n) - row);
}

void SoftmaxCrossEntropy::predict(const Tensor& logits, std::uint8_t* predictions) {
  check_logits(logits, "predict");
  const std::size_t classes = logits.dim(1);
  float row[256];
  for (std::size_t r = 0; r < logits.dim(0); ++r) {
    predictions[r] = static_cast<std::uint8_t>(argmax(logits_row(logits, r, row), classes));
  }
}

std::int64_t SoftmaxCrossEntropy::count_correct(const Tensor& logits, const std::uint8_t* labels) {
  check_logits(logits, "count_correct");
  const std::size_t classes = logits.dim(1);
  std::int64_t correct = 0;
  float row[256];
  for (std::size_t r = 0; r < logits.dim(0); ++r) {
    if (argmax(logits_row(logits, r, row), classes) == labels[r]) ++correct;
  }
  return correct;
}

}  // namespace gw::trainer
