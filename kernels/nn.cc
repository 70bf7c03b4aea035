#include "kernels/nn.h"

#include "kernels/cpu/nn_cpu.h"
#include "kernels/cuda/nn_cuda.h"

namespace gw::kernels {

void relu_forward(const float* x, float* y, std::size_t n, const Stream& stream) {
  if (stream.is_host()) return cpu::relu_forward(x, y, n);
  cuda::relu_forward(x, y, n, stream.native());
}

void relu_backward(const float* x, const float* dy, float* dx, std::size_t n,
                   const Stream& stream) {
  if (stream.is_host()) return cpu::relu_backward(x, dy, dx, n);
  cuda::relu_backward(x, dy, dx, n, stream.native());
}

void broadcast_rows(const float* bias, std::size_t rows, std::size_t cols, float* y,
                    const Stream& stream) {
  if (stream.is_host()) return cpu::broadcast_rows(bias, rows, cols, y);
  cuda::broadcast_rows(bias, rows, cols, y, stream.native());
}

void bias_grad(const float* dy, std::size_t rows, std::size_t cols, float* db,
               const Stream& stream) {
  if (stream.is_host()) return cpu::bias_grad(dy, rows, cols, db);
  cuda::bias_grad(dy, rows, cols, db, stream.native());
}

void softmax_cross_entropy_forward(const float* logits, const std::uint8_t* labels,
                                   std::size_t rows, std::size_t classes, float* probs, float* loss,
                                   const Stream& stream) {
  if (stream.is_host()) {
    return cpu::softmax_cross_entropy_forward(logits, labels, rows, classes, probs, loss);
  }
  cuda::softmax_cross_entropy_forward(logits, labels, rows, classes, probs, loss, stream.native());
}

void softmax_cross_entropy_backward(const float* probs, const std::uint8_t* labels,
                                    std::size_t rows, std::size_t classes, float scale, float* grad,
                                    const Stream& stream) {
  if (stream.is_host()) {
    return cpu::softmax_cross_entropy_backward(probs, labels, rows, classes, scale, grad);
  }
  cuda::softmax_cross_entropy_backward(probs, labels, rows, classes, scale, grad, stream.native());
}

std::size_t first_bad_label(const std::uint8_t* labels, std::size_t rows, std::size_t classes,
                            const Stream& stream) {
  if (stream.is_host()) return cpu::first_bad_label(labels, rows, classes);
  return cuda::first_bad_label(labels, rows, classes, stream.native());
}

std::size_t count_correct(const float* logits, const std::uint8_t* labels, std::size_t rows,
                          std::size_t classes, const Stream& stream) {
  if (stream.is_host()) return cpu::count_correct(logits, labels, rows, classes);
  return cuda::count_correct(logits, labels, rows, classes, stream.native());
}

void max_pool2d_forward(const float* x, std::size_t planes, std::size_t h, std::size_t w,
                        std::size_t kernel, float* y, std::uint32_t* argmax, const Stream& stream) {
  if (stream.is_host()) return cpu::max_pool2d_forward(x, planes, h, w, kernel, y, argmax);
  cuda::max_pool2d_forward(x, planes, h, w, kernel, y, argmax, stream.native());
}

void max_pool2d_backward(const float* dy, const std::uint32_t* argmax, std::size_t planes,
                         std::size_t h, std::size_t w, std::size_t kernel, float* dx,
                         const Stream& stream) {
  if (stream.is_host()) return cpu::max_pool2d_backward(dy, argmax, planes, h, w, kernel, dx);
  cuda::max_pool2d_backward(dy, argmax, planes, h, w, kernel, dx, stream.native());
}

void sgd_update(float* w, const float* g, float* momentum_buf, std::size_t n,
                const SgdCoefficients& c, const Stream& stream) {
  if (stream.is_host()) return cpu::sgd_update(w, g, momentum_buf, n, c);
  cuda::sgd_update(w, g, momentum_buf, n, c, stream.native());
}

void adam_update(float* w, const float* g, float* m, float* v, std::size_t n,
                 const AdamCoefficients& c, const Stream& stream) {
  if (stream.is_host()) return cpu::adam_update(w, g, m, v, n, c);
  cuda::adam_update(w, g, m, v, n, c, stream.native());
}

void gather_rows(const float* src, std::size_t width, const std::uint64_t* indices,
                 std::size_t count, float* dst, const Stream& stream) {
  if (stream.is_host()) return cpu::gather_rows(src, width, indices, count, dst);
  cuda::gather_rows(src, width, indices, count, dst, stream.native());
}

void gather_bytes(const std::uint8_t* src, const std::uint64_t* indices, std::size_t count,
                  std::uint8_t* dst, const Stream& stream) {
  if (stream.is_host()) return cpu::gather_bytes(src, indices, count, dst);
  cuda::gather_bytes(src, indices, count, dst, stream.native());
}

}  // namespace gw::kernels
