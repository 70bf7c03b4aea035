// kernels/low_rank.h on a CUDA stream: the Thrust algorithms of kernels/thrust/low_rank_thrust.h
// instantiated on it (Note [One algorithm source]). Nothing else belongs here.
#include "kernels/cuda/low_rank_cuda.h"
#include "kernels/thrust/cuda_policy.h"
#include "kernels/thrust/low_rank_thrust.h"

namespace gw::kernels::cuda {

void low_rank_project(const float* m, std::size_t rows, std::size_t cols, const float* q,
                      std::size_t rank, float* p, void* stream) {
  thrust_algo::low_rank_project(on_stream(stream), m, rows, cols, q, rank, p);
}

void low_rank_back(const float* m, std::size_t rows, std::size_t cols, const float* p,
                   std::size_t rank, float* q, void* stream) {
  thrust_algo::low_rank_back(on_stream(stream), m, rows, cols, p, rank, q);
}

void orthonormalize_columns(float* p, std::size_t rows, std::size_t rank, void* stream) {
  thrust_algo::orthonormalize_columns(on_stream(stream), p, rows, rank);
}

void low_rank_restore(const float* p, std::size_t rows, std::size_t rank, const float* q,
                      std::size_t cols, float* out, bool subtract, void* stream) {
  thrust_algo::low_rank_restore(on_stream(stream), p, rows, rank, q, cols, out, subtract);
}

}  // namespace gw::kernels::cuda
