// A DeviceModel's convolutions: trainer::Conv2d on the model's stream (cuDNN on a GPU).
#include "reference_trainer/gpu/device_layer.h"

#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/elementwise.h"
#include "reference_trainer/gpu/gpu_ops.h"
#include "reference_trainer/nn/conv2d.h"
#include "reference_trainer/nn/tensor.h"

namespace gw::trainer::gpu {
namespace {

using kernels::Stream;

// cuDNN on a CUDA stream (descriptors per batch size and precision: training's and
// evaluation's); on the host the CPU layer itself, its tensors copied in and out, so its own
// mixed-precision rendering applies (Note [The model on a stream]).
class ConvLayer final : public DeviceLayer {
 public:
  ConvLayer(const Conv2d& cpu, Products& p) : DeviceLayer(p) {
    shape_.in_channels = cpu.in_channels();
    shape_.out_channels = cpu.out_channels();
    shape_.kernel = cpu.kernel();
    shape_.stride = cpu.stride();
    shape_.padding = cpu.padding();
    numels = {shape_.out_channels * shape_.in_channels * shape_.kernel * shape_.kernel,
              shape_.out_channels};
    if (p.stream().is_host()) {
      host_ = std::make_unique<Conv2d>(shape_.in_channels, shape_.out_channels, shape_.kernel,
                                       shape_.stride, shape_.padding);
    } else if (!have_cudnn()) {
      throw std::runtime_error(
          "the CNN's convolutions on a GPU need cuDNN, and gradwire was built without it");
    }
  }
  const char* op_name() const override { return "conv2d"; }
  // On the host the CPU layer renders its own precision: it gets the policy too.
  void set_policy(const amp::OpPolicy* policy) override {
    DeviceLayer::set_policy(policy);
    if (host_) host_->set_op_policy(policy);
  }
  Shape output_shape(const Shape& input) const override {
    if (input.rank() != 4 || input[1] != shape_.in_channels ||
        input[2] + 2 * shape_.padding < shape_.kernel ||
        input[3] + 2 * shape_.padding < shape_.kernel) {
      throw std::invalid_argument(
          "Conv2d: expects input [N, " + std::to_string(shape_.in_channels) +
          ", H, W] at least a kernel wide with padding, got " + input.to_string());
    }
    ConvShape s = shape_;
    s.height = input[2];
    s.width = input[3];
    return {input[0], shape_.out_channels, s.out_height(), s.out_width()};
  }
  bool forward(const float* x, bool in_half, const Shape& input, float* y, bool training) override {
    decide(in_half);
    input_ = input;
    output_ = output_shape(input);
    products.count(half, 1);
    if (host_) return host_forward(x, in_half, y, training);
    const Stream& s = products.stream();
    Conv2dDnn& c = conv(input[0]);
    if (!half) {
      x_ = x;
      c.forward(x, values[0], values[1], y);
      return false;
    }
    // fp16: binary16 operands and output (the casts round), fp32 accumulation.
    Half* xh = x_half_.reserve_discard(input.numel(), s);
    kernels::cast_fp32_to_fp16(x, xh, input.numel(), s);
    Half* wh = w_half_.reserve_discard(numels[0], s);
    Half* bh = b_half_.reserve_discard(numels[1], s);
    kernels::cast_fp32_to_fp16(values[0], wh, numels[0], s);
    kernels::cast_fp32_to_fp16(values[1], bh, numels[1], s);
    Half* yh = y_half_.reserve_discard(output_.numel(), s);
    c.forward(xh, wh, bh, yh);
    kernels::cast_fp16_to_fp32(yh, y, output_.numel(), s);
    return true;
  }
  void backward(const float* dy, float* dx) override {
    products.count(half, dx ? 2 : 1);
    if (host_) {
      host_backward(dy, dx);
      return;
    }
    const Stream& s = products.stream();
    Conv2dDnn& c = conv(input_[0]);
    if (!half) {
      c.backward_filter(x_, dy, grads[0], grads[1]);
      if (dx) c.backward_data(values[0], dy, dx);
      return;
    }
    Half* dyh = y_half_.reserve_discard(output_.numel(), s);  // the forward's output is spent
    kernels::cast_fp32_to_fp16(dy, dyh, output_.numel(), s);
    Half* dwh = dw_half_.reserve_discard(numels[0], s);
    Half* dbh = db_half_.reserve_discard(numels[1], s);
    c.backward_filter(x_half_.data(), dyh, dwh, dbh);
    kernels::cast_fp16_to_fp32(dwh, grads[0], numels[0], s);
    kernels::cast_fp16_to_fp32(dbh, grads[1], numels[1], s);
    if (dx) {
      Half* dxh = x_half_.reserve_discard(input_.numel(), s);  // read by backward_filter before
      c.backward_data(w_half_.data(), dyh, dxh);
      kernels::cast_fp16_to_fp32(dxh, dx, input_.numel(), s);
    }
  }

 private:
  bool host_forward(const float* x, bool in_half, float* y, bool training) {
    for (std::size_t i = 0; i < 2; ++i) {
      host_->bind_value(i, values[i]);
      host_->bind_gradient(i, grads[i]);
    }
    in_.resize(input_, in_half ? DType::kFloat16 : DType::kFloat32);
    if (in_half) {
      kernels::cast_fp32_to_fp16(x, in_.half_data(), input_.numel(), Stream::host());
    } else {
      std::copy(x, x + input_.numel(), in_.data());
    }
    host_->forward(in_, out_, training);
    to_float(out_, y);
    return out_.dtype() == DType::kFloat16;
  }
  void host_backward(const float* dy, float* dx) {
    dy_.resize(output_);
    std::copy(dy, dy + output_.numel(), dy_.data());
    host_->backward(dy_, dx ? &dx_ : nullptr);
    if (dx) to_float(dx_, dx);
  }
  static void to_float(const Tensor& t, float* out) {
    if (t.dtype() == DType::kFloat16) {
      kernels::cast_fp16_to_fp32(t.half_data(), out, t.numel(), Stream::host());
    } else {
      std::copy(t.data(), t.data() + t.numel(), out);
    }
  }
  Conv2dDnn& conv(std::size_t batch) {
    std::unique_ptr<Conv2dDnn>& c = by_batch_[{batch, half}];
    if (!c) {
      ConvShape s = shape_;
      s.batch = batch;
      s.height = input_[2];
      s.width = input_[3];
      c = std::make_unique<Conv2dDnn>(products.stream(), s, half);
    }
    return *c;
  }

  ConvShape shape_;
  std::unique_ptr<Conv2d> host_;
  Tensor in_, out_, dy_, dx_;
  std::map<std::pair<std::size_t, bool>, std::unique_ptr<Conv2dDnn>> by_batch_;
  kernels::Buffer<Half> x_half_, w_half_, b_half_, y_half_, dw_half_, db_half_;
  const float* x_ = nullptr;
  Shape input_, output_;
};

}  // namespace

std::unique_ptr<DeviceLayer> make_device_conv(const Conv2d& cpu, Products& products) {
  return std::make_unique<ConvLayer>(cpu, products);
}

}  // namespace gw::trainer::gpu
