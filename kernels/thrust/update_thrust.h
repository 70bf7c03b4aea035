// The device algorithms of kernels/update.h, as Thrust templates over the execution policy (See
// Note [One algorithm source] in kernels/thrust/sparse_thrust.h). Internal to kernels/.
#pragma once

#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/transform.h>
#include <thrust/transform_reduce.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/elementwise_functors.h"
#include "kernels/half.h"
#include "kernels/host_device.h"
#include "kernels/outer_rule.h"
#include "kernels/thrust/float_ops.h"

namespace gw::kernels::thrust_algo {

// u = m u + g; v += u, as dgc_compressor.cc's loop: (m * u) + g, then v + u.
struct MomentumAccumulateOp {
  const float* g;
  float* u;
  float* v;
  float m;
  GW_HOST_DEVICE void operator()(std::size_t i) const {
    const float ui = add_rn(mul_rn(m, u[i]), g[i]);
    u[i] = ui;
    v[i] = add_rn(v[i], ui);
  }
};

// u = m u + g; v += g + m u: v + (g + (m * u)).
struct NesterovAccumulateOp {
  const float* g;
  float* u;
  float* v;
  float m;
  GW_HOST_DEVICE void operator()(std::size_t i) const {
    const float ui = add_rn(mul_rn(m, u[i]), g[i]);
    u[i] = ui;
    v[i] = add_rn(v[i], add_rn(g[i], mul_rn(m, ui)));
  }
};

// u = m u + g; out = u. out may alias g: g[i] is read before out[i] is written.
struct MomentumToOp {
  const float* g;
  float* u;
  float* out;
  float m;
  GW_HOST_DEVICE void operator()(std::size_t i) const {
    const float ui = add_rn(mul_rn(m, u[i]), g[i]);
    u[i] = ui;
    out[i] = ui;
  }
};

struct NesterovToOp {
  const float* g;
  float* u;
  float* out;
  float m;
  GW_HOST_DEVICE void operator()(std::size_t i) const {
    const float gi = g[i];
    const float ui = add_rn(mul_rn(m, u[i]), gi);
    u[i] = ui;
    out[i] = add_rn(gi, mul_rn(m, ui));
  }
};

struct SubtractOp {
  GW_HOST_DEVICE float operator()(float w, float a) const { return sub_rn(w, a); }
};

struct AddToAnchorOp {
  const float* avg;
  float* w;
  float* a;
  GW_HOST_DEVICE void operator()(std::size_t i) const {
    const float wi = add_rn(a[i], avg[i]);
    w[i] = wi;
    a[i] = wi;
  }
};

// outer_step (kernels/update.h), as the CPU loop: m = (x * alpha) [+ a first], d = a - m,
// u = (mu * u) + d, s = d + (mu * u), w = m + (d - (lr * s)).
struct OuterStepOp {
  const float* x;
  float alpha;
  bool x_is_delta;
  float* w;
  float* a;
  float* u;
  OuterStep step;
  GW_HOST_DEVICE void operator()(std::size_t i) const {
    const float scaled = mul_rn(x[i], alpha);
    const float m = x_is_delta ? add_rn(a[i], scaled) : scaled;
    const float d = sub_rn(a[i], m);
    float s = d;
    if (step.rule != OuterRule::kAverage) {
      const float ui = add_rn(mul_rn(step.momentum, u[i]), d);
      u[i] = ui;
      s = step.rule == OuterRule::kNesterov ? add_rn(d, mul_rn(step.momentum, ui)) : ui;
    }
    const float wi = add_rn(m, sub_rn(d, mul_rn(step.lr, s)));
    w[i] = wi;
    a[i] = wi;
  }
};

// mix (kernels/update.h), as the CPU loop: w = (alpha * local) + (beta * w).
struct MixOp {
  float alpha;
  float beta;
  GW_HOST_DEVICE float operator()(float local, float w) const {
    return add_rn(mul_rn(alpha, local), mul_rn(beta, w));
  }
};

struct ScaleToOp {
  float alpha;
  GW_HOST_DEVICE float operator()(float x) const { return mul_rn(x, alpha); }
};

struct ScaleToFp16Op {
  float alpha;
  GW_HOST_DEVICE Half operator()(float x) const {
    return Half{fp32_to_fp16_bits(mul_rn(x, alpha))};
  }
};

template <class Policy>
void momentum_accumulate(const Policy& policy, const float* g, float* u, float* v, std::size_t n,
                         float m, bool nesterov) {
  if (n == 0) return;
  const thrust::counting_iterator<std::size_t> first(0);
  if (nesterov) {
    thrust::for_each(policy, first, first + n, NesterovAccumulateOp{g, u, v, m});
  } else {
    thrust::for_each(policy, first, first + n, MomentumAccumulateOp{g, u, v, m});
  }
}

template <class Policy>
void momentum_to(const Policy& policy, const float* g, float* u, float* out, std::size_t n, float m,
                 bool nesterov) {
  if (n == 0) return;
  const thrust::counting_iterator<std::size_t> first(0);
  if (nesterov) {
    thrust::for_each(policy, first, first + n, NesterovToOp{g, u, out, m});
  } else {
    thrust::for_each(policy, first, first + n, MomentumToOp{g, u, out, m});
  }
}

// The norm needs the whole sum before anything is scaled: a reduction (the host waits for it),
// then a scale, both in the policy's order.
template <class Policy>
double clip_by_norm(const Policy& policy, float* g, std::size_t n, double limit) {
  if (n == 0) return 0.0;
  const double norm = std::sqrt(
      thrust::transform_reduce(policy, g, g + n, SquareAsDoubleOp{}, 0.0, PlusDoubleOp{}));
  if (norm > limit) {
    thrust::transform(policy, g, g + n, g, ScaleOp{static_cast<float>(limit / norm)});
  }
  return norm;
}

template <class Policy>
void subtract(const Policy& policy, const float* w, const float* a, float* d, std::size_t n) {
  if (n == 0) return;
  thrust::transform(policy, w, w + n, a, d, SubtractOp{});
}

template <class Policy>
void add_to_anchor(const Policy& policy, const float* avg, float* w, float* a, std::size_t n) {
  if (n == 0) return;
  const thrust::counting_iterator<std::size_t> first(0);
  thrust::for_each(policy, first, first + n, AddToAnchorOp{avg, w, a});
}

template <class Policy>
void outer_step(const Policy& policy, const float* x, float alpha, bool x_is_delta, float* w,
                float* a, float* u, std::size_t n, const OuterStep& step) {
  if (n == 0) return;
  const thrust::counting_iterator<std::size_t> first(0);
  thrust::for_each(policy, first, first + n, OuterStepOp{x, alpha, x_is_delta, w, a, u, step});
}

template <class Policy>
void mix(const Policy& policy, const float* local, float alpha, float* w, std::size_t n) {
  if (n == 0) return;
  thrust::transform(policy, local, local + n, w, w, MixOp{alpha, 1.0f - alpha});
}

template <class Policy>
void scale_to(const Policy& policy, const float* in, float alpha, float* out, std::size_t n) {
  if (n == 0) return;
  thrust::transform(policy, in, in + n, out, ScaleToOp{alpha});
}

template <class Policy>
void scale_to_fp16(const Policy& policy, const float* in, float alpha, Half* out, std::size_t n) {
  if (n == 0) return;
  thrust::transform(policy, in, in + n, out, ScaleToFp16Op{alpha});
}

}  // namespace gw::kernels::thrust_algo
