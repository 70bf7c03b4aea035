#include "reference_trainer/gpu/products.h"

#include "kernels/elementwise.h"
#include "reference_trainer/nn/gemm.h"

namespace gw::trainer::gpu {

Products::Products(const kernels::Stream& stream) : stream_(stream) {
  if (!stream.is_host()) blas_ = std::make_unique<Blas>(stream);
}

void Products::gemm(bool half, bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k,
                    float alpha, const float* a, std::size_t lda, const float* b, std::size_t ldb,
                    float beta, float* c, std::size_t ldc) {
  ++(half ? fp16_ops_ : fp32_ops_);
  if (!blas_) {
    trainer::gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  if (!half) {
    blas_->sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  const std::size_t a_n = (ta ? k : m) * lda, b_n = (tb ? n : k) * ldb;
  Half* ah = a_half_.reserve_discard(a_n, stream_);
  Half* bh = b_half_.reserve_discard(b_n, stream_);
  kernels::cast_fp32_to_fp16(a, ah, a_n, stream_);  // exact: the values are binary16 already
  kernels::cast_fp32_to_fp16(b, bh, b_n, stream_);
  blas_->gemm_fp16(ta, tb, m, n, k, alpha, ah, lda, bh, ldb, beta, c, /*c_half=*/false, ldc);
}

void Products::round(float* x, std::size_t n) {
  Half* h = round_half_.reserve_discard(n, stream_);
  kernels::cast_fp32_to_fp16(x, h, n, stream_);
  kernels::cast_fp16_to_fp32(h, x, n, stream_);
}

void Products::rounded_copy(const float* src, float* dst, std::size_t n) {
  Half* h = round_half_.reserve_discard(n, stream_);
  kernels::cast_fp32_to_fp16(src, h, n, stream_);
  kernels::cast_fp16_to_fp32(h, dst, n, stream_);
}

}  // namespace gw::trainer::gpu
