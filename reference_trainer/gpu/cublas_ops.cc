// Blas on cuBLAS (Note [GPU GEMM and convolution]). Built when CUDA is.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <climits>
#include <stdexcept>
#include <string>

#include "reference_trainer/gpu/gpu_ops.h"

namespace gw::trainer::gpu {
namespace {

void check(cublasStatus_t status, const char* call) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw std::runtime_error(std::string(call) + " failed: " + cublasGetStatusName(status) + " (" +
                           cublasGetStatusString(status) + ")");
}

int to_int(std::size_t v, const char* what) {
  if (v > static_cast<std::size_t>(INT_MAX)) {
    throw std::invalid_argument(std::string("gpu::Blas: ") + what + " = " + std::to_string(v) +
                                " does not fit cuBLAS's int");
  }
  return static_cast<int>(v);
}

cublasHandle_t native(void* handle) { return static_cast<cublasHandle_t>(handle); }

cublasOperation_t op(bool transpose) { return transpose ? CUBLAS_OP_T : CUBLAS_OP_N; }

}  // namespace

Blas::Blas(const kernels::Stream& stream) : stream_(stream) {
  if (stream.is_host()) {
    throw std::runtime_error("gpu::Blas needs a CUDA stream, not the host");
  }
  stream.make_current();
  cublasHandle_t handle = nullptr;
  check(cublasCreate(&handle), "cublasCreate");
  handle_ = handle;
  check(cublasSetStream(handle, static_cast<cudaStream_t>(stream.native())), "cublasSetStream");
  // Not CUBLAS_TF32_TENSOR_OP_MATH: fp32 products stay fp32 (Note [GPU GEMM and convolution]).
  check(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
}

Blas::~Blas() {
  if (handle_) cublasDestroy(native(handle_));
}

// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLAS gets B first, with the
// dimensions swapped, and each operand's leading dimension unchanged.
void Blas::sgemm(bool transpose_a, bool transpose_b, std::size_t m, std::size_t n, std::size_t k,
                 float alpha, const float* a, std::size_t lda, const float* b, std::size_t ldb,
                 float beta, float* c, std::size_t ldc) {
  if (m == 0 || n == 0) return;
  stream_.make_current();
  // k == 0 is valid for cuBLAS (C = beta C), but a leading dimension of 0 is not.
  check(cublasSgemm(native(handle_), op(transpose_b), op(transpose_a), to_int(n, "n"),
                    to_int(m, "m"), to_int(k, "k"), &alpha, b, to_int(ldb > 0 ? ldb : 1, "ldb"), a,
                    to_int(lda > 0 ? lda : 1, "lda"), &beta, c, to_int(ldc, "ldc")),
        "cublasSgemm");
  ++fp32_calls_;
}

void Blas::gemm_fp16(bool transpose_a, bool transpose_b, std::size_t m, std::size_t n,
                     std::size_t k, float alpha, const Half* a, std::size_t lda, const Half* b,
                     std::size_t ldb, float beta, void* c, bool c_half, std::size_t ldc) {
  if (m == 0 || n == 0) return;
  stream_.make_current();
  check(cublasGemmEx(native(handle_), op(transpose_b), op(transpose_a), to_int(n, "n"),
                     to_int(m, "m"), to_int(k, "k"), &alpha, b, CUDA_R_16F,
                     to_int(ldb > 0 ? ldb : 1, "ldb"), a, CUDA_R_16F,
                     to_int(lda > 0 ? lda : 1, "lda"), &beta, c, c_half ? CUDA_R_16F : CUDA_R_32F,
                     to_int(ldc, "ldc"), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        "cublasGemmEx");
  ++fp16_calls_;
}

}  // namespace gw::trainer::gpu
