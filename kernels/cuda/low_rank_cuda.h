// CUDA implementations of kernels/low_rank.h (internal: call the Stream-taking API instead).
// Device memory of the stream's device; `stream` is its cudaStream_t as void*. Plain C++
// declarations: defined in kernels/cuda/low_rank.cu, which instantiates the Thrust algorithms of
// kernels/thrust/low_rank_thrust.h on the stream, and in a build without CUDA by
// kernels/cuda/no_cuda.cc, where every one of them throws std::runtime_error.
#pragma once

#include <cstddef>

namespace gw::kernels::cuda {

void low_rank_project(const float* m, std::size_t rows, std::size_t cols, const float* q,
                      std::size_t rank, float* p, void* stream);
void low_rank_back(const float* m, std::size_t rows, std::size_t cols, const float* p,
                   std::size_t rank, float* q, void* stream);
void orthonormalize_columns(float* p, std::size_t rows, std::size_t rank, void* stream);
void low_rank_restore(const float* p, std::size_t rows, std::size_t rank, const float* q,
                      std::size_t cols, float* out, bool subtract, void* stream);

}  // namespace gw::kernels::cuda
