// CUDA implementations of kernels/nn.h (internal: call the Stream-taking API instead). Device
// memory of the stream's device; `stream` is its cudaStream_t as void*. Plain C++ declarations:
// defined in kernels/cuda/nn.cu, which instantiates the Thrust algorithms of
// kernels/thrust/nn_thrust.h on the stream, and in a build without CUDA by kernels/cuda/no_cuda.cc,
// where every one of them throws std::runtime_error.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/nn.h"

namespace gw::kernels::cuda {

void relu_forward(const float* x, float* y, std::size_t n, void* stream);
void relu_backward(const float* x, const float* dy, float* dx, std::size_t n, void* stream);
void broadcast_rows(const float* bias, std::size_t rows, std::size_t cols, float* y, void* stream);
void bias_grad(const float* dy, std::size_t rows, std::size_t cols, float* db, void* stream);
void softmax_cross_entropy_forward(const float* logits, const std::uint8_t* labels,
                                   std::size_t rows, std::size_t classes, float* probs, float* loss,
                                   void* stream);
void softmax_cross_entropy_backward(const float* probs, const std::uint8_t* labels,
                                    std::size_t rows, std::size_t classes, float scale, float* grad,
                                    void* stream);
std::size_t first_bad_label(const std::uint8_t* labels, std::size_t rows, std::size_t classes,
                            void* stream);
std::size_t count_correct(const float* logits, const std::uint8_t* labels, std::size_t rows,
                          std::size_t classes, void* stream);
void max_pool2d_forward(const float* x, std::size_t planes, std::size_t h, std::size_t w,
                        std::size_t kernel, float* y, std::uint32_t* argmax, void* stream);
void max_pool2d_backward(const float* dy, const std::uint32_t* argmax, std::size_t planes,
                         std::size_t h, std::size_t w, std::size_t kernel, float* dx, void* stream);
void sgd_update(float* w, const float* g, float* momentum_buf, std::size_t n,
                const SgdCoefficients& c, void* stream);
void adam_update(float* w, const float* g, float* m, float* v, std::size_t n,
                 const AdamCoefficients& c, void* stream);
void gather_rows(const float* src, std::size_t width, const std::uint64_t* indices,
                 std::size_t count, float* dst, void* stream);
void gather_bytes(const std::uint8_t* src, const std::uint64_t* indices, std::size_t count,
                  std::uint8_t* dst, void* stream);

}  // namespace gw::kernels::cuda
