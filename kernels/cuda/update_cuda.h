// CUDA implementations of kernels/update.h (internal: call the Stream-taking API instead). Device
// memory of the stream's device; `stream` is its cudaStream_t as void*. Plain C++ declarations:
// defined in kernels/cuda/update.cu, which instantiates the Thrust algorithms of
// kernels/thrust/update_thrust.h on the stream, and in a build without CUDA by
// kernels/cuda/no_cuda.cc, where every one of them throws std::runtime_error.
#pragma once

#include <cstddef>

#include "kernels/half.h"
#include "kernels/outer_rule.h"

namespace gw::kernels::cuda {

void momentum_accumulate(const float* g, float* u, float* v, std::size_t n, float m, bool nesterov,
                         void* stream);
void momentum_to(const float* g, float* u, float* out, std::size_t n, float m, bool nesterov,
                 void* stream);
double clip_by_norm(float* g, std::size_t n, double limit, void* stream);
void subtract(const float* w, const float* a, float* d, std::size_t n, void* stream);
void add_to_anchor(const float* avg, float* w, float* a, std::size_t n, void* stream);
void mix(const float* local, float alpha, float* w, std::size_t n, void* stream);
void outer_step(const float* x, float alpha, bool x_is_delta, float* w, float* a, float* u,
                std::size_t n, const OuterStep& step, void* stream);
void scale_to(const float* in, float alpha, float* out, std::size_t n, void* stream);
void scale_to_fp16(const float* in, float alpha, Half* out, std::size_t n, void* stream);

}  // namespace gw::kernels::cuda
