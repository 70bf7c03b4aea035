#include "kernels/low_rank.h"

#include "kernels/cpu/low_rank_cpu.h"
#include "kernels/cuda/low_rank_cuda.h"

namespace gw::kernels {

void low_rank_project(const float* m, std::size_t rows, std::size_t cols, const float* q,
                      std::size_t rank, float* p, const Stream& stream) {
  if (stream.is_host()) return cpu::low_rank_project(m, rows, cols, q, rank, p);
  cuda::low_rank_project(m, rows, cols, q, rank, p, stream.native());
}

void low_rank_back(const float* m, std::size_t rows, std::size_t cols, const float* p,
                   std::size_t rank, float* q, const Stream& stream) {
  if (stream.is_host()) return cpu::low_rank_back(m, rows, cols, p, rank, q);
  cuda::low_rank_back(m, rows, cols, p, rank, q, stream.native());
}

void orthonormalize_columns(float* p, std::size_t rows, std::size_t rank, const Stream& stream) {
  if (stream.is_host()) return cpu::orthonormalize_columns(p, rows, rank);
  cuda::orthonormalize_columns(p, rows, rank, stream.native());
}

void low_rank_restore(const float* p, std::size_t rows, std::size_t rank, const float* q,
                      std::size_t cols, float* out, bool subtract, const Stream& stream) {
  if (stream.is_host()) return cpu::low_rank_restore(p, rows, rank, q, cols, out, subtract);
  cuda::low_rank_restore(p, rows, rank, q, cols, out, subtract, stream.native());
}

}  // namespace gw::kernels
