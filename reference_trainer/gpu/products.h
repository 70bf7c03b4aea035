// What every layer of a DeviceModel shares: its stream, the matrix products, binary16 rounding,
// and the count of products by precision.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/half.h"
#include "kernels/stream.h"
#include "reference_trainer/gpu/gpu_ops.h"

namespace gw::trainer::gpu {

// Products run on OpenBLAS on the host and cuBLAS on a CUDA stream. Scratch memory here is used
// by one call at a time: the stream runs them in order.
class Products {
 public:
  explicit Products(const kernels::Stream& stream);
  const kernels::Stream& stream() const { return stream_; }

  // Row-major C = alpha op(A) op(B) + beta C. With `half`, A and B hold binary16 values (in fp32
  // storage) and the product runs as an fp16 op: on the tensor cores with fp32 accumulation on a
  // GPU, and on the host as Note [CPU rendering of fp16 ops] does it (an fp32 GEMM of those
  // values), so that the host stream keeps the CPU's bits.
  void gemm(bool half, bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, float alpha,
            const float* a, std::size_t lda, const float* b, std::size_t ldb, float beta, float* c,
            std::size_t ldc);
  // A convolution's forward, input gradient and weight gradient run outside gemm(): counted here.
  void count(bool half, std::int64_t ops) { (half ? fp16_ops_ : fp32_ops_) += ops; }

  // x = (float)(binary16) x, in place.
  void round(float* x, std::size_t n);
  // dst = (float)(binary16) src.
  void rounded_copy(const float* src, float* dst, std::size_t n);

  std::int64_t fp16_ops() const { return fp16_ops_; }
  std::int64_t fp32_ops() const { return fp32_ops_; }

 private:
  kernels::Stream stream_;
  std::unique_ptr<Blas> blas_;
  kernels::Buffer<Half> a_half_, b_half_, round_half_;
  std::int64_t fp16_ops_ = 0, fp32_ops_ = 0;
};

}  // namespace gw::trainer::gpu
