#include "kernels/elementwise.h"

#include "kernels/cpu/elementwise_cpu.h"
#include "kernels/cuda/elementwise_cuda.h"

namespace gw::kernels {

void scale(float* x, float alpha, std::size_t n, const Stream& stream) {
  if (stream.is_host()) return cpu::scale(x, alpha, n);
  return cuda::scale(x, alpha, n, stream.native());
}

void axpy(float alpha, const float* x, float* y, std::size_t n, const Stream& stream) {
  if (stream.is_host()) return cpu::axpy(alpha, x, y, n);
  return cuda::axpy(alpha, x, y, n, stream.native());
}

void cast_fp32_to_fp16(const float* in, Half* out, std::size_t n, const Stream& stream) {
  if (stream.is_host()) return cpu::cast_fp32_to_fp16(in, out, n);
  return cuda::cast_fp32_to_fp16(in, out, n, stream.native());
}

void cast_fp16_to_fp32(const Half* in, float* out, std::size_t n, const Stream& stream) {
  if (stream.is_host()) return cpu::cast_fp16_to_fp32(in, out, n);
  return cuda::cast_fp16_to_fp32(in, out, n, stream.native());
}

double sum_of_squares(const float* x, std::size_t n, const Stream& stream) {
  if (stream.is_host()) return cpu::sum_of_squares(x, n);
  return cuda::sum_of_squares(x, n, stream.native());
}

bool all_finite(const float* x, std::size_t n, const Stream& stream) {
  if (stream.is_host()) return cpu::all_finite(x, n);
  return cuda::all_finite(x, n, stream.native());
}

bool scale_and_check_finite(float* x, float alpha, std::size_t n, const Stream& stream) {
  if (stream.is_host()) return cpu::scale_and_check_finite(x, alpha, n);
  return cuda::scale_and_check_finite(x, alpha, n, stream.native());
}

}  // namespace gw::kernels
