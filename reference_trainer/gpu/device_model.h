// DeviceModel: one of the reference trainer's models (a trainer::Model's layers and parameters)
// run on a kernels::Stream, for gradwire_train's GPU mode.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "amp/op_policy.h"
#include "kernels/stream.h"
#include "reference_trainer/gpu/device_loss.h"
#include "reference_trainer/gpu/products.h"
#include "reference_trainer/nn/model.h"
#include "reference_trainer/nn/shape.h"

namespace gw::trainer::gpu {

struct DeviceLayer;  // device_layer.h

// Note [The model on a stream]
// A DeviceModel is built from a trainer::Model: the same layers, in the same order, with the same
// initial parameters, which it copies into one buffer on its stream (registration order, as
// Note [Model parameter storage]). Every activation and gradient lives on that stream; the
// per-element and per-row work is kernels/nn.h (Thrust on a GPU, the CPU layers' own loops on the
// host); products go through cuBLAS on a CUDA stream and OpenBLAS on the host (gpu::Blas,
// trainer::gemm); convolutions through cuDNN on a CUDA stream and, on the host, the CPU Conv2d
// layer itself. So on the host stream a DeviceModel computes exactly the CPU Model's bits: the
// tests check every forward, loss, gradient and evaluation against it there, on any machine, and
// what only a GPU can add (cuBLAS's and cuDNN's summation order, the stream plumbing) is
// checked within a tolerance where one is (Note [GPU GEMM and convolution]). Mixed precision
// follows Note [CPU rendering of fp16 ops] on fp32 storage: an fp16 op reads its inputs and
// parameters rounded to binary16 and rounds what it writes, so the host stream keeps the CPU's
// bits, and on a GPU its products run on the tensor cores (fp16 operands, fp32 accumulation).
//
// Nothing in a step waits for the stream except what hands a number to the host: the mean loss
// that forward_backward() returns (its per-sample losses come back through pinned memory after
// backward has been enqueued, so the device never idles for it) and evaluate()'s sums. Labels
// on a CUDA stream are not read back before use, which would stall the stream each step: they
// must be below num_classes(), as a data set checked when it was loaded guarantees
// (evaluate() checks them anyway; on the host every call checks them).
class DeviceModel {
 public:
  using GradientReadyFn = Model::GradientReadyFn;

  // The model's layers, parameters and sample shape on `stream`. Throws std::invalid_argument for
  // a layer kind it does not know, std::runtime_error when the stream's device cannot run it
  // (a CNN on a CUDA stream in a build without cuDNN).
  DeviceModel(const Model& model, const kernels::Stream& stream);
  ~DeviceModel();
  DeviceModel(const DeviceModel&) = delete;
  DeviceModel& operator=(const DeviceModel&) = delete;

  const kernels::Stream& stream() const { return stream_; }
  const std::string& kind() const { return kind_; }
  std::size_t input_size() const { return sample_shape_.numel(); }
  std::size_t num_classes() const { return num_classes_; }

  // As Model::parameters(), values in the stream's memory.
  const std::vector<Model::Parameter>& parameters() const { return params_; }
  std::size_t num_parameters() const { return total_; }
  float* parameter_buffer() { return values_.data(); }
  const float* parameter_buffer() const { return values_.data(); }
  // Where each parameter's gradient is written from now on (the stream's memory, e.g. the
  // DistributedOptimizer's views). Throws std::invalid_argument on a wrong count or a null view.
  void bind_gradients(const std::vector<float*>& grads);
  const float* gradient(std::size_t i) const { return grads_.at(i); }

  // Mixed precision, as Model::set_op_policy: every op in the precision `policy` gives it, fp16
  // ops rendered on fp32 storage as the CPU layers render them, with real fp16 products on a GPU
  // (Note [The model on a stream]); nullptr: everything fp32. Throws std::invalid_argument when
  // the policy does not know one of the model's ops.
  void set_op_policy(const amp::OpPolicy* policy);
  // How many matrix products (GEMMs, and a convolution's forward, input and weight gradients) ran
  // with fp16 operands and with fp32 ones so far: what mixed precision moved to the tensor cores.
  std::int64_t fp16_products() const;
  std::int64_t fp32_products() const;

  // As Model::forward_backward, with images and labels in the stream's memory; returns the mean
  // loss (waits for the stream).
  float forward_backward(const float* images, const std::uint8_t* labels, std::size_t batch,
                         const GradientReadyFn& on_gradient_ready = {}, float loss_scale = 1.0f);
  // As Model::evaluate (waits for the stream).
  void evaluate(const float* images, const std::uint8_t* labels, std::size_t batch,
                double* loss_sum, std::int64_t* correct);

 private:
  const float* run_forward(const float* images, std::size_t batch, bool training);

  kernels::Stream stream_;
  std::string kind_;
  Shape sample_shape_;
  std::size_t num_classes_ = 0;
  std::size_t total_ = 0;
  kernels::Buffer<float> values_, own_grads_;
  std::vector<Model::Parameter> params_;
  std::vector<float*> grads_;
  std::unique_ptr<Products> products_;  // shared by the layers and the loss
  std::vector<std::unique_ptr<DeviceLayer>> layers_;
  std::vector<std::size_t> first_param_;
  struct Activation {
    kernels::Buffer<float> data;
    Shape shape;
  };
  std::vector<Activation> activations_;  // [i]: layer i's output
  bool logits_half_ = false;             // the last forward's logits hold binary16 values
  kernels::Buffer<float> grad_a_, grad_b_;
  DeviceLoss loss_;
};

}  // namespace gw::trainer::gpu
