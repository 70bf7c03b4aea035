// A DeviceModel's layers without parameters: ReLU, Flatten and MaxPool2d on the model's stream.
#include "reference_trainer/gpu/device_layer.h"

#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/nn.h"
#include "reference_trainer/nn/max_pool2d.h"

namespace gw::trainer::gpu {
namespace {

class ReluLayer final : public DeviceLayer {
 public:
  explicit ReluLayer(Products& p) : DeviceLayer(p) {}
  const char* op_name() const override { return "relu"; }
  Shape output_shape(const Shape& input) const override { return input; }
  bool forward(const float* x, bool in_half, const Shape& input, float* y, bool) override {
    decide(in_half);
    n_ = input.numel();
    x_ = view(x, in_half, n_, x_scratch_);
    kernels::relu_forward(x_, y, n_, products.stream());  // binary16 in, binary16 out
    return half;
  }
  void backward(const float* dy_in, float* dx) override {
    if (!dx) return;
    kernels::relu_backward(x_, view(dy_in, false, n_, dy_scratch_), dx, n_, products.stream());
  }

 private:
  const float* x_ = nullptr;
  std::size_t n_ = 0;
};

class FlattenLayer final : public DeviceLayer {
 public:
  explicit FlattenLayer(Products& p) : DeviceLayer(p) {}
  const char* op_name() const override { return "flatten"; }
  Shape output_shape(const Shape& input) const override {
    if (input.rank() < 2) {
      throw std::invalid_argument("Flatten: expects [N, ...], got " + input.to_string());
    }
    return {input[0], input.without_batch().numel()};
  }
  bool forward(const float* x, bool in_half, const Shape& input, float* y, bool) override {
    decide(in_half);
    n_ = input.numel();
    kernels::copy_bytes(y, view(x, in_half, n_, x_scratch_), n_ * sizeof(float), products.stream());
    return half;
  }
  void backward(const float* dy_in, float* dx) override {
    if (!dx) return;
    kernels::copy_bytes(dx, view(dy_in, false, n_, dy_scratch_), n_ * sizeof(float),
                        products.stream());
  }

 private:
  std::size_t n_ = 0;
};

class MaxPoolLayer final : public DeviceLayer {
 public:
  MaxPoolLayer(const MaxPool2d& cpu, Products& p) : DeviceLayer(p), k_(cpu.kernel()) {}
  const char* op_name() const override { return "max_pool2d"; }
  Shape output_shape(const Shape& input) const override {
    if (input.rank() != 4 || input[2] < k_ || input[3] < k_) {
      throw std::invalid_argument("MaxPool2d(" + std::to_string(k_) +
                                  "): expects input [N, C, H, W] with H, W >= " +
                                  std::to_string(k_) + ", got " + input.to_string());
    }
    return {input[0], input[1], input[2] / k_, input[3] / k_};
  }
  bool forward(const float* x, bool in_half, const Shape& input, float* y, bool training) override {
    decide(in_half);
    planes_ = input[0] * input[1];
    h_ = input[2];
    w_ = input[3];
    const float* xv = view(x, in_half, input.numel(), x_scratch_);
    std::uint32_t* argmax = nullptr;
    if (training) argmax = argmax_.reserve_discard(output_shape(input).numel(), products.stream());
    kernels::max_pool2d_forward(xv, planes_, h_, w_, k_, y, argmax, products.stream());
    return half;
  }
  void backward(const float* dy_in, float* dx) override {
    if (!dx) return;
    const std::size_t out = planes_ * (h_ / k_) * (w_ / k_);
    kernels::max_pool2d_backward(view(dy_in, false, out, dy_scratch_), argmax_.data(), planes_, h_,
                                 w_, k_, dx, products.stream());
  }

 private:
  std::size_t k_;
  kernels::Buffer<std::uint32_t> argmax_;
  std::size_t planes_ = 0, h_ = 0, w_ = 0;
};

}  // namespace

std::unique_ptr<DeviceLayer> make_device_relu(Products& products) {
  return std::make_unique<ReluLayer>(products);
}

std::unique_ptr<DeviceLayer> make_device_flatten(Products& products) {
  return std::make_unique<FlattenLayer>(products);
}

std::unique_ptr<DeviceLayer> make_device_max_pool(const MaxPool2d& cpu, Products& products) {
  return std::make_unique<MaxPoolLayer>(cpu, products);
}

}  // namespace gw::trainer::gpu
