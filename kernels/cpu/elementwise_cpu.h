// CPU implementations of kernels/elementwise.h (internal: call the Device-taking API instead).
// Buffers are host memory; semantics are exactly those documented in kernels/elementwise.h.
#pragma once

#include <cstddef>

#include "kernels/half.h"

namespace gw::kernels::cpu {

void scale(float* x, float alpha, std::size_t n);
void axpy(float alpha, const float* x, float* y, std::size_t n);
void cast_fp32_to_fp16(const float* in, Half* out, std::size_t n);
void cast_fp16_to_fp32(const Half* in, float* out, std::size_t n);
double sum_of_squares(const float* x, std::size_t n);
bool all_finite(const float* x, std::size_t n);
bool scale_and_check_finite(float* x, float alpha, std::size_t n);

// The fp16 casts pick one of these at run time (see Note [CPU fp16 casts] in elementwise_cpu.cc).
// They are declared here so that tests cover every variant the machine can run, not only the one
// picked.
namespace detail {

// GCC's _Float16 conversions, one element at a time: any target GCC supports.
void cast_fp32_to_fp16_portable(const float* in, Half* out, std::size_t n);
void cast_fp16_to_fp32_portable(const Half* in, float* out, std::size_t n);

#if defined(__x86_64__) || defined(__i386__)
#define GW_KERNELS_HAVE_F16C_VARIANT 1
// Whether this CPU (and OS) can run the F16C variants below.
bool cpu_has_f16c();
// Eight elements per instruction with F16C; call only when cpu_has_f16c().
void cast_fp32_to_fp16_f16c(const float* in, Half* out, std::size_t n);
void cast_fp16_to_fp32_f16c(const Half* in, float* out, std::size_t n);
#endif

}  // namespace detail
}  // namespace gw::kernels::cpu
