// A DeviceModel's linear layers: trainer::Linear on the model's stream.
#include "reference_trainer/gpu/device_layer.h"

#include <stdexcept>
#include <string>

#include "kernels/nn.h"
#include "reference_trainer/nn/linear.h"

namespace gw::trainer::gpu {
namespace {

class LinearLayer final : public DeviceLayer {
 public:
  LinearLayer(const Linear& cpu, Products& p)
      : DeviceLayer(p), in_(cpu.in_features()), out_(cpu.out_features()) {
    numels = {in_ * out_, out_};
  }
  const char* op_name() const override { return "linear"; }
  Shape output_shape(const Shape& input) const override {
    if (input.rank() != 2 || input[1] != in_) {
      throw std::invalid_argument("Linear(" + std::to_string(in_) + "->" + std::to_string(out_) +
                                  "): expects input [N, " + std::to_string(in_) + "], got " +
                                  input.to_string());
    }
    return {input[0], out_};
  }
  // As trainer::Linear: y = bias in every row, then y += x W^T.
  bool forward(const float* x, bool in_half, const Shape& input, float* y, bool) override {
    decide(in_half);
    n_ = input[0];
    x_ = view(x, in_half, n_ * in_, x_scratch_);
    w_ = param(0);
    kernels::broadcast_rows(param(1), n_, out_, y, products.stream());
    products.gemm(half, false, true, n_, out_, in_, 1.0f, x_, in_, w_, in_, 1.0f, y, out_);
    finish(y, n_ * out_);
    return half;
  }
  void backward(const float* dy_in, float* dx) override {
    const float* dy = view(dy_in, false, n_ * out_, dy_scratch_);
    products.gemm(half, true, false, out_, in_, n_, 1.0f, dy, out_, x_, in_, 0.0f, grads[0], in_);
    kernels::bias_grad(dy, n_, out_, grads[1], products.stream());
    finish(grads[0], in_ * out_);
    finish(grads[1], out_);
    if (dx) {
      products.gemm(half, false, false, n_, in_, out_, 1.0f, dy, out_, w_, in_, 0.0f, dx, in_);
      finish(dx, n_ * in_);
    }
  }

 private:
  std::size_t in_, out_;
  const float* x_ = nullptr;  // the input as the op read it (cached for the weight gradient)
  const float* w_ = nullptr;
  std::size_t n_ = 0;
};

}  // namespace

std::unique_ptr<DeviceLayer> make_device_linear(const Linear& cpu, Products& products) {
  return std::make_unique<LinearLayer>(cpu, products);
}

}  // namespace gw::trainer::gpu
