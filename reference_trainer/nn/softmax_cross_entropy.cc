#include "reference_trainer/nn/softmax_cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

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

}  // namespace

float SoftmaxCrossEntropy::forward(const Tensor& logits, const std::uint8_t* labels) {
  check_logits(logits, "forward");
  const std::size_t n = logits.dim(0);
  const std::size_t classes = logits.dim(1);
  for (std::size_t r = 0; r < n; ++r) {
    if (labels[r] >= classes) {
      throw std::invalid_argument("SoftmaxCrossEntropy: label " + std::to_string(labels[r]) +
                                  " of sample " + std::to_string(r) + " is not below " +
                                  std::to_string(classes) + " classes");
    }
  }
  probs_.resize(logits.shape());
  labels_.assign(labels, labels + n);
  double sum = 0.0;
  for (std::size_t r = 0; r < n; ++r) {
    const float* z = logits.data() + r * classes;
    float* p = probs_.data() + r * classes;
    const float m = *std::max_element(z, z + classes);
    float total = 0.0f;
    for (std::size_t c = 0; c < classes; ++c) {
      p[c] = std::exp(z[c] - m);
      total += p[c];
    }
    const float inv = 1.0f / total;
    for (std::size_t c = 0; c < classes; ++c) p[c] *= inv;
    // -log softmax(z)_y = log(sum exp(z - m)) - (z_y - m)
    sum += static_cast<double>(std::log(total) - (z[labels[r]] - m));
  }
  loss_sum_ = sum;
  return static_cast<float>(sum / static_cast<double>(n));
}

void SoftmaxCrossEntropy::backward(Tensor& grad_logits) const {
  if (labels_.empty()) {
    throw std::logic_error("SoftmaxCrossEntropy: backward() without a forward() before it");
  }
  const std::size_t n = probs_.dim(0);
  const std::size_t classes = probs_.dim(1);
  grad_logits.resize(probs_.shape());
  const float scale = 1.0f / static_cast<float>(n);
  const float* p = probs_.data();
  float* g = grad_logits.data();
  for (std::size_t i = 0; i < probs_.numel(); ++i) g[i] = p[i] * scale;
  for (std::size_t r = 0; r < n; ++r) g[r * classes + labels_[r]] -= scale;
}

std::size_t SoftmaxCrossEntropy::argmax(const float* row, std::size_t n) {
  return static_cast<std::size_t>(std::max_element(row, row + n) - row);
}

void SoftmaxCrossEntropy::predict(const Tensor& logits, std::uint8_t* predictions) {
  check_logits(logits, "predict");
  const std::size_t classes = logits.dim(1);
  for (std::size_t r = 0; r < logits.dim(0); ++r) {
    predictions[r] = static_cast<std::uint8_t>(argmax(logits.data() + r * classes, classes));
  }
}

std::int64_t SoftmaxCrossEntropy::count_correct(const Tensor& logits, const std::uint8_t* labels) {
  check_logits(logits, "count_correct");
  const std::size_t classes = logits.dim(1);
  std::int64_t correct = 0;
  for (std::size_t r = 0; r < logits.dim(0); ++r) {
    if (argmax(logits.data() + r * classes, classes) == labels[r]) ++correct;
  }
  return correct;
}

}  // namespace gw::trainer
