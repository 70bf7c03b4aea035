// kernels/nn.h on a CUDA stream: the Thrust algorithms of kernels/thrust/nn_thrust.h instantiated
// on it (Note [One algorithm source]). Nothing else belongs here.
#include "kernels/cuda/nn_cuda.h"
#include "kernels/thrust/cuda_policy.h"
#include "kernels/thrust/nn_thrust.h"

namespace gw::kernels::cuda {

void relu_forward(const float* x, float* y, std::size_t n, void* stream) {
  thrust_algo::relu_forward(on_stream(stream), x, y, n);
}

void relu_backward(const float* x, const float* dy, float* dx, std::size_t n, void* stream) {
  thrust_algo::relu_backward(on_stream(stream), x, dy, dx, n);
}

void broadcast_rows(const float* bias, std::size_t rows, std::size_t cols, float* y, void* stream) {
  thrust_algo::broadcast_rows(on_stream(stream), bias, rows, cols, y);
}

void bias_grad(const float* dy, std::size_t rows, std::size_t cols, float* db, void* stream) {
  thrust_algo::bias_grad(on_stream(stream), dy, rows, cols, db);
}

void softmax_cross_entropy_forward(const float* logits, const std::uint8_t* labels,
                                   std::size_t rows, std::size_t classes, float* probs, float* loss,
                                   void* stream) {
  thrust_algo::softmax_cross_entropy_forward(on_stream(stream), logits, labels, rows, classes,
                                             probs, loss);
}

void softmax_cross_entropy_backward(const float* probs, const std::uint8_t* labels,
                                    std::size_t rows, std::size_t classes, float scale, float* grad,
                                    void* stream) {
  thrust_algo::softmax_cross_entropy_backward(on_stream(stream), probs, labels, rows, classes,
                                              scale, grad);
}

std::size_t first_bad_label(const std::uint8_t* labels, std::size_t rows, std::size_t classes,
                            void* stream) {
  return thrust_algo::first_bad_label(on_stream_synced(stream), labels, rows, classes);
}

std::size_t count_correct(const float* logits, const std::uint8_t* labels, std::size_t rows,
                          std::size_t classes, void* stream) {
  return thrust_algo::count_correct(on_stream_synced(stream), logits, labels, rows, classes);
}

void max_pool2d_forward(const float* x, std::size_t planes, std::size_t h, std::size_t w,
                        std::size_t kernel, float* y, std::uint32_t* argmax, void* stream) {
  thrust_algo::max_pool2d_forward(on_stream(stream), x, planes, h, w, kernel, y, argmax);
}

void max_pool2d_backward(const float* dy, const std::uint32_t* argmax, std::size_t planes,
                         std::size_t h, std::size_t w, std::size_t kernel, float* dx,
                         void* stream) {
  thrust_algo::max_pool2d_backward(on_stream(stream), dy, argmax, planes, h, w, kernel, dx);
}

void sgd_update(float* w, const float* g, float* momentum_buf, std::size_t n,
                const SgdCoefficients& c, void* stream) {
  thrust_algo::sgd_update(on_stream(stream), w, g, momentum_buf, n, c);
}

void adam_update(float* w, const float* g, float* m, float* v, std::size_t n,
                 const AdamCoefficients& c, void* stream) {
  thrust_algo::adam_update(on_stream(stream), w, g, m, v, n, c);
}

void gather_rows(const float* src, std::size_t width, const std::uint64_t* indices,
                 std::size_t count, float* dst, void* stream) {
  thrust_algo::gather_rows(on_stream(stream), src, width, indices, count, dst);
}

void gather_bytes(const std::uint8_t* src, const std::uint64_t* indices, std::size_t count,
                  std::uint8_t* dst, void* stream) {
  thrust_algo::gather_bytes(on_stream(stream), src, indices, count, dst);
}

}  // namespace gw::kernels::cuda
