// Per-element updates the strategies apply to gradients and parameters: DGC's momentum
// correction and per-tensor clipping, local SGD's parameter averaging and its fp16 deltas,
// DiLoCo's outer step.
//
// Each primitive runs on the Stream given last, host or CUDA, with bit-identical results on both
// (the arithmetic, and its order, is that of compressors/dgc_compressor.cc,
// plugin/local_sgd_averaging.cc and compressors/fp16_compressor.cc; each multiply and add is
// rounded on its own, never fused: kernels/thrust/float_ops.h). See kernels/sparse.h for the
// conventions (Note [Streams], Note [One algorithm source]).
#pragma once

#include <cstddef>

#include "kernels/half.h"
#include "kernels/outer_rule.h"
#include "kernels/stream.h"

namespace gw::kernels {

// DGC momentum correction into the accumulator: u = m u + g; v += u (Nesterov: v += g + m u,
// with the new u). g, u and v do not overlap.
void momentum_accumulate(const float* g, float* u, float* v, std::size_t n, float m, bool nesterov,
                         const Stream& stream);

// The dense form: u = m u + g; out = u (Nesterov: out = g + m u). out may alias g.
void momentum_to(const float* g, float* u, float* out, std::size_t n, float m, bool nesterov,
                 const Stream& stream);

// Per-tensor clipping: norm = sqrt(sum of g[i]^2, in double); when norm > limit, g[i] *=
// (float)(limit / norm). Returns norm. Synchronises. The sum's rounding depends on its order,
// which differs between devices, so the norm may differ in its last bits; the scale factor, a
// float, almost never does.
double clip_by_norm(float* g, std::size_t n, double limit, const Stream& stream);

// d = w - a (local SGD: the delta since the anchor a). d may alias w.
void subtract(const float* w, const float* a, float* d, std::size_t n, const Stream& stream);

// w = a + avg; a = w (local SGD: the averaged delta applied, the anchor moved to the result).
void add_to_anchor(const float* avg, float* w, float* a, std::size_t n, const Stream& stream);

// DiLoCo's outer step (plugin/outer_optimizer.h), per element: m = x * alpha, the ranks' mean
// parameter (x_is_delta: m = a + x * alpha, x being the reduced change since the anchor a); d = a -
// m, the pseudo-gradient; u = momentum u + d (nesterov, heavy_ball); s = d + momentum u (nesterov),
// u (heavy_ball) or d (average); then w = m + (d - lr s) and a = w. Written so that at lr 1 with no
// momentum d - lr s is exactly 0 and w = m: local SGD's averaging (scale_to, add_to_anchor), bit
// for bit. u is unused (may be null) under average. x may alias nothing else.
void outer_step(const float* x, float alpha, bool x_is_delta, float* w, float* a, float* u,
                std::size_t n, const OuterStep& step, const Stream& stream);

// Streaming DiLoCo's mixing (plugin/local_sgd_averaging.h): w = alpha * local + beta * w per
// element, beta = 1 - alpha rounded once as a float, each product and the sum rounded on its own.
// local may not alias w.
void mix(const float* local, float alpha, float* w, std::size_t n, const Stream& stream);

// out = in * alpha (local SGD: the summed parameters times 1 / ranks). out may alias in.
void scale_to(const float* in, float alpha, float* out, std::size_t n, const Stream& stream);

// out = (binary16)(in * alpha), round to nearest even (the fp16 wire of parameter deltas and
// gradients: each rank sends its value / ranks). NaN stays NaN (its payload may differ).
void scale_to_fp16(const float* in, float alpha, Half* out, std::size_t n, const Stream& stream);

}  // namespace gw::kernels
