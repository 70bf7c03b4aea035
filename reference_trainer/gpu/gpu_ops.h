// The reference trainer's GPU mode: matrix products (cuBLAS) and convolution (cuDNN) on the CUDA
// stream the model runs on. Pointers are device memory of that stream's device;
// every call is enqueued on the stream and returns at once (Note [Streams]). No CUDA header
// here: host code includes this without the toolkit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/half.h"
#include "kernels/stream.h"

namespace gw::trainer::gpu {

// Note [GPU GEMM and convolution]
// fp32 operands must give the CPU's products up to summation order, so neither library may
// round them to TF32 on the way into tensor cores: cuBLAS runs in its default math mode (which
// leaves fp32 GEMMs in fp32) and cuDNN's convolutions in CUDNN_FMA_MATH. fp16 operands (the ops
// mixed precision runs in fp16) take the tensor cores with fp32 accumulation: cublasGemmEx with
// CUBLAS_COMPUTE_32F, cuDNN in CUDNN_TENSOR_OP_MATH with an fp32 compute type. That is the
// arithmetic Note [CPU rendering of fp16 ops] renders on the CPU: fp16 in, fp32 products and
// sums, fp16 out. The convolution algorithms are fixed deterministic ones (implicit precomputed
// GEMM forward, ALGO_1 for both backward passes), chosen once per shape, never benchmarked at
// run time: a run repeats bit for bit on the same GPU, and 2 ranks sharing one GPU compute the
// same bits as 1. cuDNN 9 calls these entry points its legacy API (still shipped and supported);
// the graph API would add a frontend library for no gain at these sizes. Max pooling is not
// cuDNN's: kernels/nn.h's primitive breaks ties as the CPU layer does (the first maximum), which
// cuDNN's deterministic mode does not promise, so a pooled CNN's gradients stay the CPU's.

// True when the build has cuDNN (the CNN's GPU mode needs it; the MLP needs only cuBLAS).
bool have_cudnn();

// cuBLAS bound to one CUDA stream.
class Blas {
 public:
  // Throws std::runtime_error for the host stream, in a build without CUDA, or when cuBLAS
  // cannot start on the stream's device.
  explicit Blas(const kernels::Stream& stream);
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;

  // Row-major, as trainer::gemm: C[m x n] = alpha * op(A)[m x k] * op(B)[k x n] + beta * C.
  // Throws std::invalid_argument when a size does not fit cuBLAS's int.
  void sgemm(bool transpose_a, bool transpose_b, std::size_t m, std::size_t n, std::size_t k,
             float alpha, const float* a, std::size_t lda, const float* b, std::size_t ldb,
             float beta, float* c, std::size_t ldc);
  // The same with fp16 A and B, fp32 accumulation, and C in fp16 (c_half) or fp32.
  void gemm_fp16(bool transpose_a, bool transpose_b, std::size_t m, std::size_t n, std::size_t k,
                 float alpha, const Half* a, std::size_t lda, const Half* b, std::size_t ldb,
                 float beta, void* c, bool c_half, std::size_t ldc);

  // How many products ran with fp32 and with fp16 operands (the report's op counts).
  std::int64_t fp32_calls() const { return fp32_calls_; }
  std::int64_t fp16_calls() const { return fp16_calls_; }

 private:
  kernels::Stream stream_;
  void* handle_ = nullptr;  // cublasHandle_t
  std::int64_t fp32_calls_ = 0;
  std::int64_t fp16_calls_ = 0;
};

// One convolution's geometry, NCHW, as trainer::Conv2d (cross-correlation, square kernel).
struct ConvShape {
  std::size_t batch = 0, in_channels = 0, height = 0, width = 0;
  std::size_t out_channels = 0, kernel = 0, stride = 1, padding = 0;
  std::size_t out_height() const { return (height + 2 * padding - kernel) / stride + 1; }
  std::size_t out_width() const { return (width + 2 * padding - kernel) / stride + 1; }
};

// A cuDNN convolution of one shape, with its descriptors and workspace. Tensors are fp32, or
// fp16 when `half` (x, w, bias, y and their gradients alike; compute in fp32). Weight layout
// [out_channels, in_channels, kernel, kernel], bias [out_channels], as trainer::Conv2d.
class Conv2dDnn {
 public:
  // Throws std::runtime_error in a build without cuDNN, for the host stream, or when cuDNN
  // refuses the shape; std::invalid_argument for an empty or impossible shape.
  Conv2dDnn(const kernels::Stream& stream, const ConvShape& shape, bool half);
  ~Conv2dDnn();
  Conv2dDnn(const Conv2dDnn&) = delete;
  Conv2dDnn& operator=(const Conv2dDnn&) = delete;

  const ConvShape& shape() const { return shape_; }
  // y = conv(x, w) + bias.
  void forward(const void* x, const void* w, const void* bias, void* y);
  // dx = the input gradient (overwritten).
  void backward_data(const void* w, const void* dy, void* dx);
  // dw, db = the weight and bias gradients (overwritten).
  void backward_filter(const void* x, const void* dy, void* dw, void* db);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  ConvShape shape_;
};

}  // namespace gw::trainer::gpu
