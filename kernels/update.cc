#include "kernels/update.h"

#include "kernels/cpu/update_cpu.h"
#include "kernels/cuda/update_cuda.h"

namespace gw::kernels {

void momentum_accumulate(const float* g, float* u, float* v, std::size_t n, float m, bool nesterov,
                         const Stream& stream) {
  if (stream.is_host()) return cpu::momentum_accumulate(g, u, v, n, m, nesterov);
  cuda::momentum_accumulate(g, u, v, n, m, nesterov, stream.native());
}

void momentum_to(const float* g, float* u, float* out, std::size_t n, float m, bool nesterov,
                 const Stream& stream) {
  if (stream.is_host()) return cpu::momentum_to(g, u, out, n, m, nesterov);
  cuda::momentum_to(g, u, out, n, m, nesterov, stream.native());
}

double clip_by_norm(float* g, std::size_t n, double limit, const Stream& stream) {
  if (stream.is_host()) return cpu::clip_by_norm(g, n, limit);
  return cuda::clip_by_norm(g, n, limit, stream.native());
}

void subtract(const float* w, const float* a, float* d, std::size_t n, const Stream& stream) {
  if (stream.is_host()) return cpu::subtract(w, a, d, n);
  cuda::subtract(w, a, d, n, stream.native());
}

void add_to_anchor(const float* avg, float* w, float* a, std::size_t n, const Stream& stream) {
  if (stream.is_host()) return cpu::add_to_anchor(avg, w, a, n);
  cuda::add_to_anchor(avg, w, a, n, stream.native());
}

void outer_step(const float* x, float alpha, bool x_is_delta, float* w, float* a, float* u,
                std::size_t n, const OuterStep& step, const Stream& stream) {
  if (stream.is_host()) return cpu::outer_step(x, alpha, x_is_delta, w, a, u, n, step);
  cuda::outer_step(x, alpha, x_is_delta, w, a, u, n, step, stream.native());
}

void mix(const float* local, float alpha, float* w, std::size_t n, const Stream& stream) {
  if (stream.is_host()) return cpu::mix(local, alpha, w, n);
  cuda::mix(local, alpha, w, n, stream.native());
}

void scale_to(const float* in, float alpha, float* out, std::size_t n, const Stream& stream) {
  if (stream.is_host()) return cpu::scale_to(in, alpha, out, n);
  cuda::scale_to(in, alpha, out, n, stream.native());
}

void scale_to_fp16(const float* in, float alpha, Half* out, std::size_t n, const Stream& stream) {
  if (stream.is_host()) return cpu::scale_to_fp16(in, alpha, out, n);
  cuda::scale_to_fp16(in, alpha, out, n, stream.native());
}

}  // namespace gw::kernels
