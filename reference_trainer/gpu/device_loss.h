// A DeviceModel's loss on its stream: softmax cross-entropy as trainer::SoftmaxCrossEntropy
// computes it (Note [The model on a stream]).
#pragma once

#include <cstddef>
#include <cstdint>

#include "amp/op_policy.h"
#include "kernels/stream.h"
#include "reference_trainer/gpu/products.h"

namespace gw::trainer::gpu {

class DeviceLoss {
 public:
  // `products`: the model's, for binary16 rounding; it must outlive the loss.
  DeviceLoss(const kernels::Stream& stream, std::size_t num_classes, Products& products)
      : stream_(stream), num_classes_(num_classes), products_(products) {}

  // The precisions `policy` gives the loss op (nullptr: fp32).
  void set_policy(const amp::OpPolicy* policy);

  // Host labels are always checked; labels on a CUDA stream only with `read_from_device` (it
  // waits for the stream: evaluate() does, forward_backward() does not,
  // Note [The model on a stream]). `who`: the DeviceModel method, for the message.
  void check_labels(const std::uint8_t* labels, std::size_t batch, const char* who,
                    bool read_from_device) const;
  // The batch's per-sample losses and probabilities, in the precision the policy gives the loss
  // for the logits' dtype (`logits_half`: they hold binary16 values an fp16 op wrote); in fp16 the
  // logits are read rounded and the probabilities rounded.
  void forward(const float* logits, bool logits_half, const std::uint8_t* labels,
               std::size_t batch);
  // The gradient with respect to the logits of the last forward(), times `scale`, into `grad`
  // (batch x classes), rounded when the loss ran in fp16.
  void backward(const std::uint8_t* labels, std::size_t batch, float scale, float* grad);
  // The per-sample losses of the last forward() summed in double in sample order (each rounded
  // to binary16 first when the loss ran in fp16), as SoftmaxCrossEntropy does. Waits for the
  // stream.
  double sum(std::size_t batch);

 private:
  kernels::Stream stream_;
  std::size_t num_classes_;
  Products& products_;
  kernels::Buffer<float> probs_, rows_, logits_scratch_;
  bool half_ = false;  // the last forward ran in fp16
  amp::Precision if32_ = amp::Precision::kFloat32, if16_ = amp::Precision::kFloat32;
  kernels::PinnedBuffer<float> host_;
};

}  // namespace gw::trainer::gpu
