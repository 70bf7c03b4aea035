// The device algorithms of kernels/nn.h, as Thrust templates over the execution policy (See
// Note [One algorithm source] in kernels/thrust/sparse_thrust.h). Internal to kernels/.
//
// Every float operation is the CPU loop's (kernels/cpu/nn_cpu.cc), in its order. Where the loop
// walks a row or a column in order (a softmax row, an argmax, a bias column sum, a pooling
// window), one thread does the same walk: the sums and first-maximum rules then give the CPU's
// bits by construction. The trainer's rows are short (classes <= 256, windows of 4) and its
// columns a batch long, so a thread per row or column leaves no GPU idle for long; a parallel
// reduction would change the order of the additions, and so the bits.
#pragma once

#include <thrust/count.h>
#include <thrust/find.h>
#include <thrust/for_each.h>
#include <thrust/gather.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/transform.h>

#include <math.h>  // ::expf, ::logf: the names nvcc and glibc share

#include <cstddef>
#include <cstdint>

#include "kernels/host_device.h"
#include "kernels/nn.h"
#include "kernels/thrust/float_ops.h"

namespace gw::kernels::thrust_algo {

// exp and log: expf and logf, the same names on both sides. The host's are glibc's (std::exp and
// std::log of a float in the CPU loops call them too); the device's are CUDA's, which may differ
// from glibc's in the last bit (kernels/nn.h).
GW_HOST_DEVICE inline float exp_f(float x) { return expf(x); }
GW_HOST_DEVICE inline float log_f(float x) { return logf(x); }

// The first largest of x[0, n) (std::max_element: a later value wins only when greater).
GW_HOST_DEVICE inline std::size_t first_max(const float* x, std::size_t n) {
  std::size_t best = 0;
  for (std::size_t c = 1; c < n; ++c) {
    if (x[c] > x[best]) best = c;
  }
  return best;
}

// --- Activation and bias ------------------------------------------------------------------------

struct ReluForwardOp {
  GW_HOST_DEVICE float operator()(float x) const { return x > 0.0f ? x : 0.0f; }
};

struct ReluBackwardOp {
  GW_HOST_DEVICE float operator()(float x, float dy) const { return x > 0.0f ? dy : 0.0f; }
};

struct BroadcastRowsOp {
  const float* bias;
  std::size_t cols;
  GW_HOST_DEVICE float operator()(std::size_t i) const { return bias[i % cols]; }
};

// Column c of dy summed from 0.0f in row order, as linear.cc's loop adds row after row.
struct BiasGradOp {
  const float* dy;
  std::size_t rows;
  std::size_t cols;
  float* db;
  GW_HOST_DEVICE void operator()(std::size_t c) const {
    float sum = 0.0f;
    for (std::size_t r = 0; r < rows; ++r) sum = add_rn(sum, dy[r * cols + c]);
    db[c] = sum;
  }
};

// --- Softmax cross-entropy ----------------------------------------------------------------------

// Row r: softmax_cross_entropy.cc's forward, operation for operation.
struct SoftmaxCrossEntropyRowOp {
  const float* logits;
  const std::uint8_t* labels;
  std::size_t classes;
  float* probs;
  float* loss;
  GW_HOST_DEVICE void operator()(std::size_t r) const {
    const float* z = logits + r * classes;
    float* p = probs + r * classes;
    const float m = z[first_max(z, classes)];
    float total = 0.0f;
    for (std::size_t c = 0; c < classes; ++c) {
      p[c] = exp_f(sub_rn(z[c], m));
      total = add_rn(total, p[c]);
    }
    const float inv = div_rn(1.0f, total);
    for (std::size_t c = 0; c < classes; ++c) p[c] = mul_rn(p[c], inv);
    loss[r] = sub_rn(log_f(total), sub_rn(z[labels[r]], m));
  }
};

// grad[i] = probs[i] * scale, less scale where i is its row's label: the CPU's two loops in one
// pass (the product is the same, and the subtraction comes after it as there).
struct SoftmaxCrossEntropyBackwardOp {
  const float* probs;
  const std::uint8_t* labels;
  std::size_t classes;
  float scale;
  float* grad;
  GW_HOST_DEVICE void operator()(std::size_t i) const {
    float g = mul_rn(probs[i], scale);
    if (i % classes == labels[i / classes]) g = sub_rn(g, scale);
    grad[i] = g;
  }
};

struct BadLabelOp {
  const std::uint8_t* labels;
  std::size_t classes;
  GW_HOST_DEVICE bool operator()(std::size_t r) const { return labels[r] >= classes; }
};

struct CorrectRowOp {
  const float* logits;
  const std::uint8_t* labels;
  std::size_t classes;
  GW_HOST_DEVICE bool operator()(std::size_t r) const {
    return first_max(logits + r * classes, classes) == labels[r];
  }
};

// --- Max pooling --------------------------------------------------------------------------------

// Output element o: max_pool2d.cc's window walk.
struct MaxPoolForwardOp {
  const float* x;
  std::size_t h, w, kernel, oh_n, ow_n;
  float* y;
  std::uint32_t* argmax;
  GW_HOST_DEVICE void operator()(std::size_t o) const {
    const std::size_t plane_out = oh_n * ow_n;
    const std::size_t p = o / plane_out;
    const std::size_t oh = (o % plane_out) / ow_n;
    const std::size_t ow = o % ow_n;
    const float* in = x + p * h * w;
    std::size_t best = oh * kernel * w + ow * kernel;
    for (std::size_t i = 0; i < kernel; ++i) {
      for (std::size_t j = 0; j < kernel; ++j) {
        const std::size_t at = (oh * kernel + i) * w + ow * kernel + j;
        if (in[at] > in[best]) best = at;
      }
    }
    y[o] = in[best];
    if (argmax != nullptr) argmax[o] = static_cast<std::uint32_t>(best);
  }
};

// Input element i gathers the gradient of the one window that can hold it (windows do not
// overlap), if that window's maximum was i: 0 + dy, as the CPU's zero fill then +=.
struct MaxPoolBackwardOp {
  const float* dy;
  const std::uint32_t* argmax;
  std::size_t h, w, kernel, oh_n, ow_n;
  float* dx;
  GW_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t plane_in = h * w;
    const std::size_t p = i / plane_in;
    const std::size_t at = i % plane_in;
    const std::size_t oh = at / w / kernel;
    const std::size_t ow = at % w / kernel;
    float g = 0.0f;
    if (oh < oh_n && ow < ow_n) {
      const std::size_t o = p * oh_n * ow_n + oh * ow_n + ow;
      if (argmax[o] == at) g = add_rn(0.0f, dy[o]);
    }
    dx[i] = g;
  }
};

// --- Optimizers ---------------------------------------------------------------------------------

// sgd.cc's loops: d = (g * gs) + (wd * w).
GW_HOST_DEVICE inline float decayed_grad(float g, float gs, float wd, float w) {
  return add_rn(mul_rn(g, gs), mul_rn(wd, w));
}

struct SgdPlainOp {
  float* w;
  const float* g;
  SgdCoefficients c;
  GW_HOST_DEVICE void operator()(std::size_t i) const {
    w[i] = sub_rn(w[i], mul_rn(c.lr, decayed_grad(g[i], c.grad_scale, c.weight_decay, w[i])));
  }
};

// Momentum, and Nesterov's look-ahead when c.nesterov (the same for every element, so the branch
// costs a GPU nothing; the CPU keeps two branch-free loops for its vectoriser).
struct SgdMomentumOp {
  float* w;
  const float* g;
  float* buf;
  SgdCoefficients c;
  GW_HOST_DEVICE void operator()(std::size_t i) const {
    const float d = decayed_grad(g[i], c.grad_scale, c.weight_decay, w[i]);
    const float b = add_rn(mul_rn(c.momentum, buf[i]), d);
    buf[i] = b;
    const float step = c.nesterov ? add_rn(d, mul_rn(c.momentum, b)) : b;
    w[i] = sub_rn(w[i], mul_rn(c.lr, step));
  }
};

// adam.cc's loop.
struct AdamOp {
  float* w;
  const float* g;
  float* m;
  float* v;
  AdamCoefficients c;
  GW_HOST_DEVICE void operator()(std::size_t i) const {
    const float d = decayed_grad(g[i], c.grad_scale, c.weight_decay, w[i]);
    const float mi = add_rn(mul_rn(c.beta1, m[i]), mul_rn(c.one_minus_beta1, d));
    const float vi = add_rn(mul_rn(c.beta2, v[i]), mul_rn(c.one_minus_beta2, mul_rn(d, d)));
    m[i] = mi;
    v[i] = vi;
    const float denom = add_rn(div_rn(sqrt_rn(vi), c.bias2_sqrt), c.eps);
    w[i] = sub_rn(w[i], mul_rn(c.step_size, div_rn(mi, denom)));
  }
};

// --- Batches ------------------------------------------------------------------------------------

struct GatherRowsOp {
  const float* src;
  std::size_t width;
  const std::uint64_t* indices;
  GW_HOST_DEVICE float operator()(std::size_t i) const {
    return src[indices[i / width] * width + i % width];
  }
};

// --- The algorithms -----------------------------------------------------------------------------

template <class Policy>
void relu_forward(const Policy& policy, const float* x, float* y, std::size_t n) {
  if (n == 0) return;
  thrust::transform(policy, x, x + n, y, ReluForwardOp{});
}

template <class Policy>
void relu_backward(const Policy& policy, const float* x, const float* dy, float* dx,
                   std::size_t n) {
  if (n == 0) return;
  thrust::transform(policy, x, x + n, dy, dx, ReluBackwardOp{});
}

template <class Policy>
void broadcast_rows(const Policy& policy, const float* bias, std::size_t rows, std::size_t cols,
                    float* y) {
  if (rows == 0 || cols == 0) return;
  const thrust::counting_iterator<std::size_t> first(0);
  thrust::transform(policy, first, first + rows * cols, y, BroadcastRowsOp{bias, cols});
}

template <class Policy>
void bias_grad(const Policy& policy, const float* dy, std::size_t rows, std::size_t cols,
               float* db) {
  if (cols == 0) return;
  const thrust::counting_iterator<std::size_t> first(0);
  thrust::for_each(policy, first, first + cols, BiasGradOp{dy, rows, cols, db});
}

template <class Policy>
void softmax_cross_entropy_forward(const Policy& policy, const float* logits,
                                   const std::uint8_t* labels, std::size_t rows,
                                   std::size_t classes, float* probs, float* loss) {
  if (rows == 0) return;
  const thrust::counting_iterator<std::size_t> first(0);
  thrust::for_each(policy, first, first + rows,
                   SoftmaxCrossEntropyRowOp{logits, labels, classes, probs, loss});
}

template <class Policy>
void softmax_cross_entropy_backward(const Policy& policy, const float* probs,
                                    const std::uint8_t* labels, std::size_t rows,
                                    std::size_t classes, float scale, float* grad) {
  if (rows == 0 || classes == 0) return;
  const thrust::counting_iterator<std::size_t> first(0);
  thrust::for_each(policy, first, first + rows * classes,
                   SoftmaxCrossEntropyBackwardOp{probs, labels, classes, scale, grad});
}

// The policy must wait for its stream: find_if's answer is the host's.
template <class Policy>
std::size_t first_bad_label(const Policy& policy, const std::uint8_t* labels, std::size_t rows,
                            std::size_t classes) {
  if (rows == 0) return 0;
  const thrust::counting_iterator<std::size_t> first(0);
  return *thrust::find_if(policy, first, first + rows, BadLabelOp{labels, classes});
}

// The policy must wait for its stream, as first_bad_label's.
template <class Policy>
std::size_t count_correct(const Policy& policy, const float* logits, const std::uint8_t* labels,
                          std::size_t rows, std::size_t classes) {
  if (rows == 0) return 0;
  const thrust::counting_iterator<std::size_t> first(0);
  return static_cast<std::size_t>(
      thrust::count_if(policy, first, first + rows, CorrectRowOp{logits, labels, classes}));
}

template <class Policy>
void max_pool2d_forward(const Policy& policy, const float* x, std::size_t planes, std::size_t h,
                        std::size_t w, std::size_t kernel, float* y, std::uint32_t* argmax) {
  const std::size_t outputs = planes * (h / kernel) * (w / kernel);
  if (outputs == 0) return;
  const thrust::counting_iterator<std::size_t> first(0);
  thrust::for_each(policy, first, first + outputs,
                   MaxPoolForwardOp{x, h, w, kernel, h / kernel, w / kernel, y, argmax});
}

template <class Policy>
void max_pool2d_backward(const Policy& policy, const float* dy, const std::uint32_t* argmax,
                         std::size_t planes, std::size_t h, std::size_t w, std::size_t kernel,
                         float* dx) {
  const std::size_t inputs = planes * h * w;
  if (inputs == 0) return;
  const thrust::counting_iterator<std::size_t> first(0);
  thrust::for_each(policy, first, first + inputs,
                   MaxPoolBackwardOp{dy, argmax, h, w, kernel, h / kernel, w / kernel, dx});
}

template <class Policy>
void sgd_update(const Policy& policy, float* w, const float* g, float* momentum_buf, std::size_t n,
                const SgdCoefficients& c) {
  if (n == 0) return;
  const thrust::counting_iterator<std::size_t> first(0);
  if (momentum_buf == nullptr) {
    thrust::for_each(policy, first, first + n, SgdPlainOp{w, g, c});
  } else {
    thrust::for_each(policy, first, first + n, SgdMomentumOp{w, g, momentum_buf, c});
  }
}

template <class Policy>
void adam_update(const Policy& policy, float* w, const float* g, float* m, float* v, std::size_t n,
                 const AdamCoefficients& c) {
  if (n == 0) return;
  const thrust::counting_iterator<std::size_t> first(0);
  thrust::for_each(policy, first, first + n, AdamOp{w, g, m, v, c});
}

template <class Policy>
void gather_rows(const Policy& policy, const float* src, std::size_t width,
                 const std::uint64_t* indices, std::size_t count, float* dst) {
  if (count == 0 || width == 0) return;
  const thrust::counting_iterator<std::size_t> first(0);
  thrust::transform(policy, first, first + count * width, dst, GatherRowsOp{src, width, indices});
}

template <class Policy>
void gather_bytes(const Policy& policy, const std::uint8_t* src, const std::uint64_t* indices,
                  std::size_t count, std::uint8_t* dst) {
  if (count == 0) return;
  thrust::gather(policy, indices, indices + count, src, dst);
}

}  // namespace gw::kernels::thrust_algo
