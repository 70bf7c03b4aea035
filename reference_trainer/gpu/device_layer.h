// The layers of a DeviceModel (Note [The model on a stream]): the base every kind shares, and the
// kinds, one per CPU layer kind (device_linear.cc, device_conv.cc, device_relu_flatten_pool.cc).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <vector>

#include "amp/op_policy.h"
#include "kernels/stream.h"
#include "reference_trainer/gpu/products.h"
#include "reference_trainer/nn/model.h"
#include "reference_trainer/nn/shape.h"

namespace gw::trainer {
class Conv2d;
class Linear;
class MaxPool2d;
}  // namespace gw::trainer

namespace gw::trainer::gpu {

// One layer of a DeviceModel on its stream. forward() may keep pointers to its input: the model
// keeps every activation (and the caller the images) alive until the step's backward has run.
//
// Mixed precision renders the CPU layers' rule (Note [CPU rendering of fp16 ops]) on fp32
// storage: an op the policy runs in fp16 reads its input, its incoming gradient and its
// parameters rounded to binary16, and rounds what it writes (its output, its input gradient, its
// parameters' gradients); an activation an fp16 op wrote is marked half, which is what the next
// op's decision reads (the CPU's fp16 tensor dtype). The values are the CPU's, bit for bit on the
// host stream.
struct DeviceLayer {
  explicit DeviceLayer(Products& p) : products(p) {}
  virtual ~DeviceLayer() = default;
  DeviceLayer(const DeviceLayer&) = delete;
  DeviceLayer& operator=(const DeviceLayer&) = delete;
  virtual const char* op_name() const = 0;
  virtual Shape output_shape(const Shape& input) const = 0;
  // `in_half`: x holds binary16 values an fp16 op wrote. Returns whether y does.
  virtual bool forward(const float* x, bool in_half, const Shape& input, float* y,
                       bool training) = 0;
  // dx null: the first layer, whose input gradient nobody needs.
  virtual void backward(const float* dy, float* dx) = 0;

  // The precisions `policy` gives op_name() (nullptr: fp32); DeviceModel::set_op_policy.
  virtual void set_policy(const amp::OpPolicy* policy) {
    if32 = policy ? policy->decide(op_name(), true) : amp::Precision::kFloat32;
    if16 = policy ? policy->decide(op_name(), false) : amp::Precision::kFloat32;
  }
  // This forward's precision, from its input's.
  bool decide(bool in_half) {
    half = (in_half ? if16 : if32) == amp::Precision::kFloat16;
    return half;
  }
  // x as this op reads it: rounded into `scratch` when the op is fp16 and x is not binary16.
  const float* view(const float* x, bool x_half, std::size_t n, kernels::Buffer<float>& scratch) {
    if (!half || x_half) return x;
    float* r = scratch.reserve_discard(n, products.stream());
    products.rounded_copy(x, r, n);
    return r;
  }
  // Parameter i as this op reads it: the fp32 master, or (fp16) its binary16 working copy.
  const float* param(std::size_t i) {
    if (!half) return values[i];
    float* r = working_[i].reserve_discard(numels[i], products.stream());
    products.rounded_copy(values[i], r, numels[i]);
    return r;
  }
  // After an fp16 op wrote x: round it.
  void finish(float* x, std::size_t n) {
    if (half) products.round(x, n);
  }

  Products& products;
  // The parameters' numels, and where their values and gradients are.
  std::vector<std::size_t> numels;
  std::vector<float*> values, grads;
  amp::Precision if32 = amp::Precision::kFloat32, if16 = amp::Precision::kFloat32;
  bool half = false;

 protected:
  std::map<std::size_t, kernels::Buffer<float>> working_;
  kernels::Buffer<float> x_scratch_, dy_scratch_;
};

// The device version of `layer` (its kind, sizes and op name; its parameters are bound by the
// DeviceModel). Throws std::invalid_argument for a kind that has none, std::runtime_error when
// the stream's device cannot run it.
std::unique_ptr<DeviceLayer> make_device_layer(const ModelLayer& layer, Products& products);

// The kinds (make_device_layer's choices).
std::unique_ptr<DeviceLayer> make_device_linear(const Linear& cpu, Products& products);
std::unique_ptr<DeviceLayer> make_device_conv(const Conv2d& cpu, Products& products);
std::unique_ptr<DeviceLayer> make_device_relu(Products& products);
std::unique_ptr<DeviceLayer> make_device_flatten(Products& products);
std::unique_ptr<DeviceLayer> make_device_max_pool(const MaxPool2d& cpu, Products& products);

}  // namespace gw::trainer::gpu
