// Element-wise and reduction primitives over flat fp32/fp16 buffers.
//
// Each primitive takes the Stream it runs on (Note [Streams], kernels/stream.h): the host stream
// runs the CPU implementation (kernels/cpu), a CUDA stream enqueues the CUDA one (kernels/cuda) on
// that stream, whose device must hold the buffers. Those that return a value to the host
// (sum_of_squares, all_finite, scale_and_check_finite) synchronise the stream first. n == 0 is
// valid everywhere and touches no memory.
#pragma once

#include <cstddef>

#include "kernels/half.h"
#include "kernels/stream.h"

namespace gw::kernels {

// x[i] *= alpha
void scale(float* x, float alpha, std::size_t n, const Stream& stream);

// y[i] += alpha * x[i]
void axpy(float alpha, const float* x, float* y, std::size_t n, const Stream& stream);

// out[i] = (binary16) in[i], round to nearest even; magnitudes past the fp16 range become +-inf,
// NaN stays NaN.
void cast_fp32_to_fp16(const float* in, Half* out, std::size_t n, const Stream& stream);

// out[i] = (float) in[i], exact.
void cast_fp16_to_fp32(const Half* in, float* out, std::size_t n, const Stream& stream);

// sum of x[i]^2, accumulated in double.
double sum_of_squares(const float* x, std::size_t n, const Stream& stream);

// true when no x[i] is inf or NaN.
bool all_finite(const float* x, std::size_t n, const Stream& stream);

// x[i] *= alpha in one pass that also returns all_finite of the results: the unscale-and-check of
// mixed precision (an inf or NaN in, or a product past the fp32 range, gives false). Every
// element is scaled either way.
bool scale_and_check_finite(float* x, float alpha, std::size_t n, const Stream& stream);

}  // namespace gw::kernels
