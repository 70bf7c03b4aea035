// Per-element float and bit operations of the Thrust algorithms (kernels/thrust/), defined for
// both nvcc's device code and the host compiler, so that the same functor gives the same bits on
// a GPU, under Thrust's OpenMP system, and in the CPU loops' arithmetic (kernels/cpu).
//
// Every multiply and add is rounded on its own: nvcc would otherwise contract a * b + c into one
// fma (one rounding), and CUDA results would differ from the CPU's in the last bit (as AxpyOp in
// kernels/elementwise_functors.h). The host side builds with -ffp-contract=off (ISO C++ mode) and
// no FMA target, so a plain a * b + c there is two roundings too.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/host_device.h"

namespace gw::kernels::thrust_algo {

GW_HOST_DEVICE inline float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

GW_HOST_DEVICE inline float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

GW_HOST_DEVICE inline float sub_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

// Division and square root, correctly rounded on both sides (nvcc's defaults are too, unless
// -use_fast_math; the intrinsics say so whatever the flags).
GW_HOST_DEVICE inline float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

GW_HOST_DEVICE inline float sqrt_rn(float x) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(x);
#else
  return std::sqrt(x);
#endif
}

GW_HOST_DEVICE inline std::uint32_t float_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
#endif
}

GW_HOST_DEVICE inline float bits_float(std::uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
#endif
}

// |x| as an integer key: the float's bits without the sign. Integer order is magnitude order, NaN
// above +inf (Note [Sampled top-k]).
GW_HOST_DEVICE inline std::uint32_t magnitude_key(float x) { return float_bits(x) & 0x7fffffffu; }

// The b-th (0-based) draw of SplitMix64 seeded with `seed`: its state after b + 1 steps is
// seed + (b + 1) * increment, so every draw can be computed on its own, in any order.
GW_HOST_DEVICE inline std::uint64_t splitmix64_draw(std::uint64_t seed, std::uint64_t b) {
  std::uint64_t z = seed + (b + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// IEEE binary16 bits of f, round to nearest even, overflow to inf, NaN to a quiet NaN that keeps
// the sign: integer operations only, so both devices give the same bits.
GW_HOST_DEVICE inline std::uint16_t fp32_to_fp16_bits(float f) {
  const std::uint32_t bits = float_bits(f);
  const auto sign = static_cast<std::uint32_t>((bits >> 16) & 0x8000u);
  const std::uint32_t exp32 = (bits >> 23) & 0xffu;
  const std::uint32_t mant32 = bits & 0x7fffffu;
  if (exp32 == 0xffu) {
    return static_cast<std::uint16_t>(sign | (mant32 != 0 ? (0x7e00u | (mant32 >> 13)) : 0x7c00u));
  }
  const int exp16 = static_cast<int>(exp32) - 127 + 15;
  if (exp16 >= 31) return static_cast<std::uint16_t>(sign | 0x7c00u);
  std::uint32_t significand;
  int drop;
  std::uint32_t base;
  if (exp16 > 0) {
    significand = mant32;
    drop = 13;
    base = static_cast<std::uint32_t>(exp16) << 10;
  } else {
    if (exp16 < -10) return static_cast<std::uint16_t>(sign);
    significand = mant32 | 0x800000u;
    drop = 14 - exp16;
    base = 0;
  }
  std::uint32_t q = significand >> drop;
  const std::uint32_t rest = significand & ((1u << drop) - 1);
  const std::uint32_t half = 1u << (drop - 1);
  if (rest > half || (rest == half && (q & 1u) != 0)) ++q;
  return static_cast<std::uint16_t>(sign | (base + q));
}

}  // namespace gw::kernels::thrust_algo
