#include "reference_trainer/nn/gemm.h"

#include <cblas.h>

#include <climits>
#include <stdexcept>
#include <string>

namespace gw::trainer {
namespace {

// Plain int, which every CBLAS takes (OpenBLAS calls it blasint).
int to_blas(std::size_t v, const char* what) {
  if (v > static_cast<std::size_t>(INT_MAX)) {
    throw std::invalid_argument(std::string("gemm: ") + what + " = " + std::to_string(v) +
                                " does not fit a BLAS int");
  }
  return static_cast<int>(v);
}

}  // namespace

void gemm(bool transpose_a, bool transpose_b, std::size_t m, std::size_t n, std::size_t k,
          float alpha, const float* a, std::size_t lda, const float* b, std::size_t ldb, float beta,
          float* c, std::size_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // BLAS rejects a zero leading dimension; the product is empty, so C = beta * C
    for (std::size_t i = 0; i < m; ++i) {
      for (std::size_t j = 0; j < n; ++j)
        c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    }
    return;
  }
  cblas_sgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans,
              transpose_b ? CblasTrans : CblasNoTrans, to_blas(m, "m"), to_blas(n, "n"),
              to_blas(k, "k"), alpha, a, to_blas(lda, "lda"), b, to_blas(ldb, "ldb"), beta, c,
              to_blas(ldc, "ldc"));
}

}  // namespace gw::trainer
