// Element-wise and reduction primitives over flat fp32/fp16 buffers.
//
// Each primitive takes the Device its buffers live on and dispatches to the CPU implementation
// (kernels/cpu) or the CUDA implementation (kernels/cuda). CUDA versions run on the default stream
// of the current device; those that return a value synchronise before returning. Calling a kCuda
// primitive in a build without CUDA throws std::runtime_error. n == 0 is valid everywhere and
// touches no memory.
#pragma once

#include <cstddef>

#include "kernels/device.h"
#include "kernels/half.h"

namespace gw::kernels {

// x[i] *= alpha
void scale(float* x, float alpha, std::size_t n, Device device);

// y[i] += alpha * x[i]
void axpy(float alpha, const float* x, float* y, std::size_t n, Device device);

// out[i] = (binary16) in[i], round to nearest even; magnitudes past the fp16 range become +-inf,
// NaN stays NaN.
void cast_fp32_to_fp16(const float* in, Half* out, std::size_t n, Device device);

// out[i] = (float) in[i], exact.
void cast_fp16_to_fp32(const Half* in, float* out, std::size_t n, Device device);

// sum of x[i]^2, accumulated in double.
double sum_of_squares(const float* x, std::size_t n, Device device);

// true when no x[i] is inf or NaN.
bool all_finite(const float* x, std::size_t n, Device device);

// x[i] *= alpha in one pass that also returns all_finite of the results: the unscale-and-check of
// mixed precision (an inf or NaN in, or a product past the fp32 range, gives false). Every
// element is scaled either way.
bool scale_and_check_finite(float* x, float alpha, std::size_t n, Device device);

}  // namespace gw::kernels
