#include "kernels/cpu/elementwise_cpu.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/elementwise_functors.h"

#if defined(GW_KERNELS_HAVE_F16C_VARIANT)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace gw::kernels::cpu {

// Simple counted loops over independent elements: g++ -O2/-O3 vectorises each of them (check with
// -fopt-info-vec). n == 0 runs no iteration, so null pointers are fine then.

void scale(float* x, float alpha, std::size_t n) {
  const ScaleOp op{alpha};
  for (std::size_t i = 0; i < n; ++i) x[i] = op(x[i]);
}

// No __restrict: y += alpha * y (x == y) is a legitimate call. GCC vectorises the loop behind a
// run-time overlap check instead.
void axpy(float alpha, const float* x, float* y, std::size_t n) {
  const AxpyOp op{alpha};
  for (std::size_t i = 0; i < n; ++i) y[i] = op(x[i], y[i]);
}

// Several independent partial sums: a single running sum is a serial dependency chain the
// compiler may not reorder (that would change the rounding), so it would not vectorise.
double sum_of_squares(const float* x, std::size_t n) {
  constexpr std::size_t kLanes = 8;
  const SquareAsDoubleOp square;
  double lanes[kLanes] = {};
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (std::size_t j = 0; j < kLanes; ++j) lanes[j] += square(x[i + j]);
  }
  double total = 0.0;
  for (; i < n; ++i) total += square(x[i]);
  for (double lane : lanes) total += lane;
  return total;
}

bool all_finite(const float* x, std::size_t n) {
  // Branch-free integer OR over a block, checked once per block: vectorised, and it still stops
  // soon after the first inf/NaN in a large buffer.
  constexpr std::size_t kBlock = 4096;
  const NonFiniteBitOp flag;
  for (std::size_t begin = 0; begin < n; begin += kBlock) {
    const std::size_t end = std::min(n, begin + kBlock);
    std::uint32_t bits = 0;
    for (std::size_t i = begin; i < end; ++i) bits |= flag(x[i]);
    if (bits != 0) return false;
  }
  return true;
}

bool scale_and_check_finite(float* x, float alpha, std::size_t n) {
  // One read and one write per element; the flag is an OR like all_finite's, kept for the whole
  // buffer (every element must be scaled anyway).
  const ScaleOp op{alpha};
  const NonFiniteBitOp flag;
  std::uint32_t bits = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float y = op(x[i]);
    x[i] = y;
    bits |= flag(y);
  }
  return bits == 0;
}

// Note [CPU fp16 casts]
// The conversions are IEEE binary16 with round-to-nearest-even, overflow to inf and NaN kept NaN.
// GCC's _Float16 gives exactly that on every target, but g++ 12 on x86-64 converts it one element
// at a time (a libgcc call per element without F16C) and cannot vectorise it. Where the CPU has
// F16C, the casts use its 8-wide conversion instructions instead, with the rounding mode given in
// the instruction so that MXCSR settings cannot change the result. Both variants produce the same
// bits; tests check each against an independent bit-level reference. clang before 15 has no
// _Float16 on x86-64; there the casts go through its __fp16, a storage-only binary16 whose
// conversions round the same way (clang 14 builds the fuzzer tree, Note "Sanitizer trees").

namespace detail {

#if defined(__clang__) && __clang_major__ < 15
using Binary16 = __fp16;
#else
using Binary16 = _Float16;
#endif

void cast_fp32_to_fp16_portable(const float* __restrict in, Half* __restrict out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const Binary16 h = static_cast<Binary16>(in[i]);
    std::memcpy(&out[i], &h, sizeof h);
  }
}

void cast_fp16_to_fp32_portable(const Half* __restrict in, float* __restrict out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    Binary16 h;
    std::memcpy(&h, &in[i], sizeof h);
    out[i] = static_cast<float>(h);
  }
}

#if defined(GW_KERNELS_HAVE_F16C_VARIANT)

bool cpu_has_f16c() {
  // AVX too: the 8-wide forms use ymm registers, which also need OS support (which
  // __builtin_cpu_supports checks). F16C is read from CPUID leaf 1 directly, because not every
  // compiler that reads this file (clang-tidy's) knows the "f16c" feature name.
  __builtin_cpu_init();
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __builtin_cpu_supports("avx") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 &&
         (ecx & bit_F16C) != 0;
}

__attribute__((target("avx,f16c"))) void cast_fp32_to_fp16_f16c(const float* __restrict in,
                                                                Half* __restrict out,
                                                                std::size_t n) {
  constexpr int kRoundNearestEven = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), kRoundNearestEven);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  // The tail through Binary16, which compiles to scalar F16C instructions under this target.
  for (; i < n; ++i) {
    const Binary16 h = static_cast<Binary16>(in[i]);
    std::memcpy(&out[i], &h, sizeof h);
  }
}

__attribute__((target("avx,f16c"))) void cast_fp16_to_fp32_f16c(const Half* __restrict in,
                                                                float* __restrict out,
                                                                std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) {
    Binary16 h;
    std::memcpy(&h, &in[i], sizeof h);
    out[i] = static_cast<float>(h);
  }
}

#endif  // GW_KERNELS_HAVE_F16C_VARIANT

}  // namespace detail

#if defined(GW_KERNELS_HAVE_F16C_VARIANT)
namespace {

bool use_f16c() {
  static const bool available = detail::cpu_has_f16c();
  return available;
}

}  // namespace
#endif

void cast_fp32_to_fp16(const float* in, Half* out, std::size_t n) {
#if defined(GW_KERNELS_HAVE_F16C_VARIANT)
  if (use_f16c()) {
    detail::cast_fp32_to_fp16_f16c(in, out, n);
    return;
  }
#endif
  detail::cast_fp32_to_fp16_portable(in, out, n);
}

void cast_fp16_to_fp32(const Half* in, float* out, std::size_t n) {
#if defined(GW_KERNELS_HAVE_F16C_VARIANT)
  if (use_f16c()) {
    detail::cast_fp16_to_fp32_f16c(in, out, n);
    return;
  }
#endif
  detail::cast_fp16_to_fp32_portable(in, out, n);
}

}  // namespace gw::kernels::cpu
