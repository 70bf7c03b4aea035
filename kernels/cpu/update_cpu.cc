#include "kernels/cpu/update_cpu.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/elementwise_cpu.h"

namespace gw::kernels::cpu {

// dgc_compressor.cc's loops, operation for operation.

void momentum_accumulate(const float* __restrict g, float* __restrict u, float* __restrict v,
                         std::size_t n, float m, bool nesterov) {
  if (nesterov) {
    for (std::size_t i = 0; i < n; ++i) {
      const float ui = m * u[i] + g[i];
      u[i] = ui;
      v[i] += g[i] + m * ui;
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      const float ui = m * u[i] + g[i];
      u[i] = ui;
      v[i] += ui;
    }
  }
}

void momentum_to(const float* g, float* __restrict u, float* out, std::size_t n, float m,
                 bool nesterov) {
  if (nesterov) {
    for (std::size_t i = 0; i < n; ++i) {
      const float gi = g[i];
      const float ui = m * u[i] + gi;
      u[i] = ui;
      out[i] = gi + m * ui;
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      const float ui = m * u[i] + g[i];
      u[i] = ui;
      out[i] = ui;
    }
  }
}

// DgcCompressor::clip.
double clip_by_norm(float* g, std::size_t n, double limit) {
  const double norm = std::sqrt(sum_of_squares(g, n));
  if (norm > limit) scale(g, static_cast<float>(limit / norm), n);
  return norm;
}

// local_sgd_averaging.cc's loops.

void subtract(const float* w, const float* a, float* d, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) d[i] = w[i] - a[i];
}

void add_to_anchor(const float* avg, float* w, float* a, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    w[i] = a[i] + avg[i];
    a[i] = w[i];
  }
}

// outer_optimizer.cc's step (kernels/update.h).
void outer_step(const float* x, float alpha, bool x_is_delta, float* w, float* a, float* u,
                std::size_t n, const OuterStep& step) {
  const float lr = step.lr, mu = step.momentum;
  for (std::size_t i = 0; i < n; ++i) {
    const float m = x_is_delta ? a[i] + x[i] * alpha : x[i] * alpha;
    const float d = a[i] - m;
    float s = d;
    if (step.rule != OuterRule::kAverage) {
      const float ui = mu * u[i] + d;
      u[i] = ui;
      s = step.rule == OuterRule::kNesterov ? d + mu * ui : ui;
    }
    const float wi = m + (d - lr * s);
    w[i] = wi;
    a[i] = wi;
  }
}

void mix(const float* local, float alpha, float* w, std::size_t n) {
  const float beta = 1.0f - alpha;
  for (std::size_t i = 0; i < n; ++i) w[i] = alpha * local[i] + beta * w[i];
}

void scale_to(const float* in, float alpha, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = in[i] * alpha;
}

// Fp16Compressor::encode: scale and cast in cache-sized chunks, no scratch the size of the input.
void scale_to_fp16(const float* in, float alpha, Half* out, std::size_t n) {
  constexpr std::size_t kChunk = 4096;
  float chunk[kChunk];
  for (std::size_t i = 0; i < n; i += kChunk) {
    const std::size_t m = std::min(kChunk, n - i);
    for (std::size_t j = 0; j < m; ++j) chunk[j] = in[i + j] * alpha;
    cast_fp32_to_fp16(chunk, out + i, m);
  }
}

}  // namespace gw::kernels::cpu
