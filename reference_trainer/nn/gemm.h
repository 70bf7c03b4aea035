// The one place the trainer calls BLAS: row-major single-precision GEMM.
#pragma once

#include <cstddef>

namespace gw::trainer {

// C[m x n] = alpha * op(A)[m x k] * op(B)[k x n] + beta * C, all row-major, op = transpose when the
// flag is set. Throws std::invalid_argument when a size does not fit BLAS's int.
void gemm(bool transpose_a, bool transpose_b, std::size_t m, std::size_t n, std::size_t k,
          float alpha, const float* a, std::size_t lda, const float* b, std::size_t ldb, float beta,
          float* c, std::size_t ldc);

}  // namespace gw::trainer
