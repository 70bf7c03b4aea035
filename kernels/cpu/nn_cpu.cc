#include "kernels/cpu/nn_cpu.h"

#include <algorithm>
#include <cmath>

namespace gw::kernels::cpu {

// The loops below are the reference trainer's (reference_trainer/nn, reference_trainer/optim),
// moved here operation for operation: the layers call them, and the device algorithms
// (kernels/thrust/nn_thrust.h) are tested against them bit for bit.

// relu.cc.
void relu_forward(const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void relu_backward(const float* x, const float* dy, float* dx, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
}

// linear.cc: the bias as the start of the output, and its gradient as a column sum in row order.
void broadcast_rows(const float* bias, std::size_t rows, std::size_t cols, float* y) {
  for (std::size_t r = 0; r < rows; ++r) std::copy(bias, bias + cols, y + r * cols);
}

void bias_grad(const float* dy, std::size_t rows, std::size_t cols, float* db) {
  std::fill(db, db + cols, 0.0f);
  for (std::size_t r = 0; r < rows; ++r) {
    const float* row = dy + r * cols;
    for (std::size_t c = 0; c < cols; ++c) db[c] += row[c];
  }
}

// softmax_cross_entropy.cc.
void softmax_cross_entropy_forward(const float* logits, const std::uint8_t* labels,
                                   std::size_t rows, std::size_t classes, float* probs,
                                   float* loss) {
  for (std::size_t r = 0; r < rows; ++r) {
    const float* z = logits + r * classes;
    float* p = probs + r * classes;
    const float m = *std::max_element(z, z + classes);
    float total = 0.0f;
    for (std::size_t c = 0; c < classes; ++c) {
      p[c] = std::exp(z[c] - m);
      total += p[c];
    }
    const float inv = 1.0f / total;
    for (std::size_t c = 0; c < classes; ++c) p[c] *= inv;
    // -log softmax(z)_y = log(sum exp(z - m)) - (z_y - m)
    loss[r] = std::log(total) - (z[labels[r]] - m);
  }
}

void softmax_cross_entropy_backward(const float* probs, const std::uint8_t* labels,
                                    std::size_t rows, std::size_t classes, float scale,
                                    float* grad) {
  for (std::size_t i = 0; i < rows * classes; ++i) grad[i] = probs[i] * scale;
  for (std::size_t r = 0; r < rows; ++r) grad[r * classes + labels[r]] -= scale;
}

std::size_t first_bad_label(const std::uint8_t* labels, std::size_t rows, std::size_t classes) {
  for (std::size_t r = 0; r < rows; ++r) {
    if (labels[r] >= classes) return r;
  }
  return rows;
}

std::size_t argmax_row(const float* row, std::size_t cols) {
  return static_cast<std::size_t>(std::max_element(row, row + cols) - row);
}

std::size_t count_correct(const float* logits, const std::uint8_t* labels, std::size_t rows,
                          std::size_t classes) {
  std::size_t correct = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    if (argmax_row(logits + r * classes, classes) == labels[r]) ++correct;
  }
  return correct;
}

// max_pool2d.cc.
void max_pool2d_forward(const float* in, std::size_t planes, std::size_t h, std::size_t w,
                        std::size_t kernel, float* out, std::uint32_t* argmax) {
  const std::size_t oh_n = h / kernel;
  const std::size_t ow_n = w / kernel;
  for (std::size_t p = 0; p < planes; ++p) {
    const float* x = in + p * h * w;
    float* y = out + p * oh_n * ow_n;
    for (std::size_t oh = 0; oh < oh_n; ++oh) {
      for (std::size_t ow = 0; ow < ow_n; ++ow) {
        std::size_t best = oh * kernel * w + ow * kernel;
        for (std::size_t i = 0; i < kernel; ++i) {
          for (std::size_t j = 0; j < kernel; ++j) {
            const std::size_t at = (oh * kernel + i) * w + ow * kernel + j;
            if (x[at] > x[best]) best = at;
          }
        }
        const std::size_t o = oh * ow_n + ow;
        y[o] = x[best];
        if (argmax != nullptr) argmax[p * oh_n * ow_n + o] = static_cast<std::uint32_t>(best);
      }
    }
  }
}

void max_pool2d_backward(const float* dy, const std::uint32_t* argmax, std::size_t planes,
                         std::size_t h, std::size_t w, std::size_t kernel, float* dx) {
  const std::size_t plane_in = h * w;
  const std::size_t plane_out = (h / kernel) * (w / kernel);
  std::fill(dx, dx + planes * plane_in, 0.0f);
  for (std::size_t o = 0; o < planes * plane_out; ++o) {
    dx[(o / plane_out) * plane_in + argmax[o]] += dy[o];
  }
}

// sgd.cc and adam.cc: __restrict pointers and no branches in the loops, so that g++ vectorises
// them (the CPU trainer is benchmarked). std::sqrt may set errno, so g++ vectorises Adam's loop
// only with -fno-math-errno, which kernels/CMakeLists.txt gives this file.

namespace {

void plain_update(float* __restrict w, const float* __restrict g, std::size_t n, float lr, float wd,
                  float gs) {
  for (std::size_t i = 0; i < n; ++i) w[i] -= lr * (g[i] * gs + wd * w[i]);
}

void momentum_update(float* __restrict w, const float* __restrict g, float* __restrict buf,
                     std::size_t n, float lr, float wd, float momentum, float gs) {
  for (std::size_t i = 0; i < n; ++i) {
    const float b = momentum * buf[i] + (g[i] * gs + wd * w[i]);
    buf[i] = b;
    w[i] -= lr * b;
  }
}

void nesterov_update(float* __restrict w, const float* __restrict g, float* __restrict buf,
                     std::size_t n, float lr, float wd, float momentum, float gs) {
  for (std::size_t i = 0; i < n; ++i) {
    const float d = g[i] * gs + wd * w[i];
    const float b = momentum * buf[i] + d;
    buf[i] = b;
    w[i] -= lr * (d + momentum * b);
  }
}

void adam_loop(float* __restrict w, const float* __restrict g, float* __restrict m,
               float* __restrict v, std::size_t n, const AdamCoefficients c) {
  for (std::size_t i = 0; i < n; ++i) {
    const float d = g[i] * c.grad_scale + c.weight_decay * w[i];
    const float mi = c.beta1 * m[i] + c.one_minus_beta1 * d;
    const float vi = c.beta2 * v[i] + c.one_minus_beta2 * (d * d);
    m[i] = mi;
    v[i] = vi;
    w[i] -= c.step_size * (mi / (std::sqrt(vi) / c.bias2_sqrt + c.eps));
  }
}

}  // namespace

void sgd_update(float* w, const float* g, float* momentum_buf, std::size_t n,
                const SgdCoefficients& c) {
  if (momentum_buf == nullptr) {
    plain_update(w, g, n, c.lr, c.weight_decay, c.grad_scale);
  } else if (c.nesterov) {
    nesterov_update(w, g, momentum_buf, n, c.lr, c.weight_decay, c.momentum, c.grad_scale);
  } else {
    momentum_update(w, g, momentum_buf, n, c.lr, c.weight_decay, c.momentum, c.grad_scale);
  }
}

void adam_update(float* w, const float* g, float* m, float* v, std::size_t n,
                 const AdamCoefficients& c) {
  adam_loop(w, g, m, v, n, c);
}

// data/sharder.cc's gather, without its range check (the caller's).
void gather_rows(const float* src, std::size_t width, const std::uint64_t* indices,
                 std::size_t count, float* dst) {
  for (std::size_t i = 0; i < count; ++i) {
    std::copy_n(src + indices[i] * width, width, dst + i * width);
  }
}

void gather_bytes(const std::uint8_t* src, const std::uint64_t* indices, std::size_t count,
                  std::uint8_t* dst) {
  for (std::size_t i = 0; i < count; ++i) dst[i] = src[indices[i]];
}

}  // namespace gw::kernels::cpu
