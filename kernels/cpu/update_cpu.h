// CPU implementations of kernels/update.h (internal: call the Stream-taking API instead). Host
// memory; semantics exactly those documented there.
#pragma once

#include <cstddef>

#include "kernels/half.h"
#include "kernels/outer_rule.h"

namespace gw::kernels::cpu {

void momentum_accumulate(const float* g, float* u, float* v, std::size_t n, float m, bool nesterov);
void momentum_to(const float* g, float* u, float* out, std::size_t n, float m, bool nesterov);
double clip_by_norm(float* g, std::size_t n, double limit);
void subtract(const float* w, const float* a, float* d, std::size_t n);
void add_to_anchor(const float* avg, float* w, float* a, std::size_t n);
void mix(const float* local, float alpha, float* w, std::size_t n);
void outer_step(const float* x, float alpha, bool x_is_delta, float* w, float* a, float* u,
                std::size_t n, const OuterStep& step);
void scale_to(const float* in, float alpha, float* out, std::size_t n);
void scale_to_fp16(const float* in, float alpha, Half* out, std::size_t n);

}  // namespace gw::kernels::cpu
