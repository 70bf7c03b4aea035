#include "reference_trainer/gpu/device_loss.h"

#include <stdexcept>
#include <string>

#include "kernels/nn.h"
#include "reference_trainer/nn/precision.h"
#include "reference_trainer/nn/softmax_cross_entropy.h"

namespace gw::trainer::gpu {

using amp::Precision;

void DeviceLoss::set_policy(const amp::OpPolicy* policy) {
  if32_ = policy ? policy->decide(SoftmaxCrossEntropy::kOpName, true) : Precision::kFloat32;
  if16_ = policy ? policy->decide(SoftmaxCrossEntropy::kOpName, false) : Precision::kFloat32;
}

void DeviceLoss::check_labels(const std::uint8_t* labels, std::size_t batch, const char* who,
                              bool read_from_device) const {
  if (labels == nullptr) {
    throw std::invalid_argument(std::string("DeviceModel::") + who + ": null labels");
  }
  std::size_t bad = batch;
  if (stream_.is_host()) {
    for (std::size_t r = 0; r < batch && bad == batch; ++r) {
      if (labels[r] >= num_classes_) bad = r;
    }
  } else if (read_from_device) {
    bad = kernels::first_bad_label(labels, batch, num_classes_, stream_);
  }
  if (bad == batch) return;
  std::uint8_t label = 0;
  kernels::copy_bytes(&label, labels + bad, 1, stream_);
  stream_.synchronize();
  throw std::invalid_argument("SoftmaxCrossEntropy: label " + std::to_string(label) +
                              " of sample " + std::to_string(bad) + " is not below " +
                              std::to_string(num_classes_) + " classes");
}

void DeviceLoss::forward(const float* logits, bool logits_half, const std::uint8_t* labels,
                         std::size_t batch) {
  half_ = (logits_half ? if16_ : if32_) == Precision::kFloat16;
  const std::size_t n = batch * num_classes_;
  const float* z = logits;
  if (half_ && !logits_half) {
    float* r = logits_scratch_.reserve_discard(n, stream_);
    products_.rounded_copy(logits, r, n);
    z = r;
  }
  float* probs = probs_.reserve_discard(n, stream_);
  float* loss = rows_.reserve_discard(batch, stream_);
  kernels::softmax_cross_entropy_forward(z, labels, batch, num_classes_, probs, loss, stream_);
  if (half_) products_.round(probs, n);
}

void DeviceLoss::backward(const std::uint8_t* labels, std::size_t batch, float scale, float* grad) {
  kernels::softmax_cross_entropy_backward(probs_.data(), labels, batch, num_classes_, scale, grad,
                                          stream_);
  if (half_) products_.round(grad, batch * num_classes_);
}

double DeviceLoss::sum(std::size_t batch) {
  float* host = host_.reserve_discard(batch);
  kernels::copy_bytes(host, rows_.data(), batch * sizeof(float), stream_);
  stream_.synchronize();
  return sum_sample_losses(host, batch, half_);
}

}  // namespace gw::trainer::gpu
