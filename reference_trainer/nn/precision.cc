#include "reference_trainer/nn/precision.h"

#include <algorithm>

#include "kernels/elementwise.h"

namespace gw::trainer {

void round_through_half(float* x, std::size_t n, std::vector<Half>& scratch) {
  scratch.resize(n);
  kernels::cast_fp32_to_fp16(x, scratch.data(), n, kernels::Stream::host());
  kernels::cast_fp16_to_fp32(scratch.data(), x, n, kernels::Stream::host());
}

const float* op_view(const Tensor& t, amp::Precision p, std::vector<float>& scratch,
                     std::vector<Half>& half_scratch) {
  const std::size_t n = t.numel();
  if (t.dtype() == DType::kFloat16) {
    scratch.resize(n);
    kernels::cast_fp16_to_fp32(t.half_data(), scratch.data(), n, kernels::Stream::host());
    return scratch.data();
  }
  if (p == amp::Precision::kFloat32) return t.data();
  scratch.resize(n);
  std::copy(t.data(), t.data() + n, scratch.data());
  round_through_half(scratch.data(), n, half_scratch);
  return scratch.data();
}

double sum_sample_losses(const float* losses, std::size_t n, bool half) {
  double sum = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    float x = losses[i];
    if (half) {
      Half h;
      kernels::cast_fp32_to_fp16(&x, &h, 1, kernels::Stream::host());
      kernels::cast_fp16_to_fp32(&h, &x, 1, kernels::Stream::host());
    }
    sum += static_cast<double>(x);
  }
  return sum;
}

void store(const float* values, const Shape& shape, DType dtype, Tensor& dst) {
  dst.resize(shape, dtype);
  if (dtype == DType::kFloat32) {
    std::copy(values, values + dst.numel(), dst.data());
  } else {
    kernels::cast_fp32_to_fp16(values, dst.half_data(), dst.numel(), kernels::Stream::host());
  }
}

}  // namespace gw::trainer
