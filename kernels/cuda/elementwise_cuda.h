// CUDA implementations of kernels/elementwise.h (internal: call the Device-taking API instead).
//
// Buffers are device memory of the current device; work runs on its default stream, and the
// functions that return a value synchronise it. Failures of CUDA calls throw std::runtime_error.
// Plain C++ declarations: this header is included by host code built without nvcc, and in builds
// without CUDA the definitions come from no_cuda.cc and throw.
#pragma once

#include <cstddef>

#include "kernels/half.h"

namespace gw::kernels::cuda {

void scale(float* x, float alpha, std::size_t n);
void axpy(float alpha, const float* x, float* y, std::size_t n);
void cast_fp32_to_fp16(const float* in, Half* out, std::size_t n);
void cast_fp16_to_fp32(const Half* in, float* out, std::size_t n);
double sum_of_squares(const float* x, std::size_t n);
bool all_finite(const float* x, std::size_t n);
bool scale_and_check_finite(float* x, float alpha, std::size_t n);

}  // namespace gw::kernels::cuda
