// CPU implementations of kernels/nn.h (internal: call the Stream-taking API instead). Host
// memory; semantics exactly those documented there. These are the reference trainer's loops,
// moved here from its layers and optimizers, which now call them through kernels/nn.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/nn.h"

namespace gw::kernels::cpu {

void relu_forward(const float* x, float* y, std::size_t n);
void relu_backward(const float* x, const float* dy, float* dx, std::size_t n);
void broadcast_rows(const float* bias, std::size_t rows, std::size_t cols, float* y);
void bias_grad(const float* dy, std::size_t rows, std::size_t cols, float* db);
void softmax_cross_entropy_forward(const float* logits, const std::uint8_t* labels,
                                   std::size_t rows, std::size_t classes, float* probs,
                                   float* loss);
void softmax_cross_entropy_backward(const float* probs, const std::uint8_t* labels,
                                    std::size_t rows, std::size_t classes, float scale,
                                    float* grad);
std::size_t first_bad_label(const std::uint8_t* labels, std::size_t rows, std::size_t classes);
std::size_t argmax_row(const float* row, std::size_t cols);
std::size_t count_correct(const float* logits, const std::uint8_t* labels, std::size_t rows,
                          std::size_t classes);
void max_pool2d_forward(const float* x, std::size_t planes, std::size_t h, std::size_t w,
                        std::size_t kernel, float* y, std::uint32_t* argmax);
void max_pool2d_backward(const float* dy, const std::uint32_t* argmax, std::size_t planes,
                         std::size_t h, std::size_t w, std::size_t kernel, float* dx);
void sgd_update(float* w, const float* g, float* momentum_buf, std::size_t n,
                const SgdCoefficients& c);
void adam_update(float* w, const float* g, float* m, float* v, std::size_t n,
                 const AdamCoefficients& c);
void gather_rows(const float* src, std::size_t width, const std::uint64_t* indices,
                 std::size_t count, float* dst);
void gather_bytes(const std::uint8_t* src, const std::uint64_t* indices, std::size_t count,
                  std::uint8_t* dst);

}  // namespace gw::kernels::cpu
