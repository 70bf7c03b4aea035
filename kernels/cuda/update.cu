// kernels/update.h on a CUDA stream: the Thrust algorithms of kernels/thrust/update_thrust.h
// instantiated on it (Note [One algorithm source]). Nothing else belongs here.
#include "kernels/cuda/update_cuda.h"
#include "kernels/thrust/cuda_policy.h"
#include "kernels/thrust/update_thrust.h"

namespace gw::kernels::cuda {

void momentum_accumulate(const float* g, float* u, float* v, std::size_t n, float m, bool nesterov,
                         void* stream) {
  thrust_algo::momentum_accumulate(on_stream(stream), g, u, v, n, m, nesterov);
}

void momentum_to(const float* g, float* u, float* out, std::size_t n, float m, bool nesterov,
                 void* stream) {
  thrust_algo::momentum_to(on_stream(stream), g, u, out, n, m, nesterov);
}

double clip_by_norm(float* g, std::size_t n, double limit, void* stream) {
  return thrust_algo::clip_by_norm(on_stream_synced(stream), g, n, limit);
}

void subtract(const float* w, const float* a, float* d, std::size_t n, void* stream) {
  thrust_algo::subtract(on_stream(stream), w, a, d, n);
}

void add_to_anchor(const float* avg, float* w, float* a, std::size_t n, void* stream) {
  thrust_algo::add_to_anchor(on_stream(stream), avg, w, a, n);
}

void mix(const float* local, float alpha, float* w, std::size_t n, void* stream) {
  thrust_algo::mix(on_stream(stream), local, alpha, w, n);
}

void outer_step(const float* x, float alpha, bool x_is_delta, float* w, float* a, float* u,
                std::size_t n, const OuterStep& step, void* stream) {
  thrust_algo::outer_step(on_stream(stream), x, alpha, x_is_delta, w, a, u, n, step);
}

void scale_to(const float* in, float alpha, float* out, std::size_t n, void* stream) {
  thrust_algo::scale_to(on_stream(stream), in, alpha, out, n);
}

void scale_to_fp16(const float* in, float alpha, Half* out, std::size_t n, void* stream) {
  thrust_algo::scale_to_fp16(on_stream(stream), in, alpha, out, n);
}

}  // namespace gw::kernels::cuda
