// CUDA implementations of kernels/elementwise.h (internal: call the Device-taking API instead).
//
// Buffers are device memory of the stream's device; work is enqueued on `stream` (a cudaStream_t,
// never the legacy default stream), and the functions that return a value synchronise it. Failures
// of CUDA calls throw std::runtime_error. Plain C++ declarations: this header is included by host
// code built without nvcc, and in builds without CUDA the definitions come from no_cuda.cc and
// throw.
#pragma once

#include <cstddef>

#include "kernels/half.h"

namespace gw::kernels::cuda {

void scale(float* x, float alpha, std::size_t n, void* stream);
void axpy(float alpha, const float* x, float* y, std::size_t n, void* stream);
void cast_fp32_to_fp16(const float* in, Half* out, std::size_t n, void* stream);
void cast_fp16_to_fp32(const Half* in, float* out, std::size_t n, void* stream);
double sum_of_squares(const float* x, std::size_t n, void* stream);
bool all_finite(const float* x, std::size_t n, void* stream);
bool scale_and_check_finite(float* x, float alpha, std::size_t n, void* stream);

}  // namespace gw::kernels::cuda
