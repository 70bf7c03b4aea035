// Shared by the kernels tests: test sizes, seeded random inputs, bit-level helpers and scalar
// fp16 reference conversions written from the IEEE 754 bit layout alone (no _Float16, no F16C,
// no CUDA), so that they check the implementations independently.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/half.h"

namespace gw::kernels::test_util {

// Empty, a single element, fewer than one vector register, and large (not a multiple of any block
// or vector width used by the implementations).
inline const std::vector<std::size_t> kTestSizes = {0, 1, 7, 1'000'000};

inline std::string size_name(const ::testing::TestParamInfo<std::size_t>& info) {
  return "n" + std::to_string(info.param);
}

inline std::uint32_t float_bits(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

inline float bits_float(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline bool is_fp16_nan(std::uint16_t bits) {
  return (bits & 0x7c00u) == 0x7c00u && (bits & 0x03ffu) != 0;
}

// Floats of mixed sign and magnitude (about 1e-3 to 1e3), fixed seed.
inline std::vector<float> random_floats(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-10, 10);
  std::vector<float> x(n);
  for (float& v : x) v = std::ldexp(mantissa(rng), exponent(rng));
  return x;
}

// Inputs for fp32 -> fp16: arbitrary bit patterns (every class: fp32 subnormals, inf, NaN),
// values across the fp16 normal and subnormal range and past its top, and exact rounding ties.
inline std::vector<float> random_cast_inputs(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::uint32_t> any_bits;
  std::uniform_int_distribution<int> kind(0, 3);
  std::uniform_int_distribution<std::uint32_t> fp16_bits(0, 0x7bff);  // finite, non-negative
  std::uniform_int_distribution<int> exponent(-30, 18);  // fp16 subnormals .. past 65504
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::vector<float> x(n);
  for (float& v : x) {
    const std::uint32_t sign = (any_bits(rng) & 1u) << 31;
    switch (kind(rng)) {
      case 0:
        v = bits_float(any_bits(rng));
        break;
      case 1:
        v = bits_float(float_bits(std::ldexp(mantissa(rng), exponent(rng))) | sign);
        break;
      case 2: {
        // Exactly halfway between two neighbouring fp16 values: the 13 bits below the fp16
        // mantissa are 1000000000000 (for subnormal halves, the tie sits lower; case 1 covers it).
        const std::uint32_t h = fp16_bits(rng);
        const std::uint32_t exp16 = h >> 10;
        if (exp16 == 0) {
          v = bits_float(float_bits(std::ldexp(static_cast<float>(h) + 0.5f, -24)) | sign);
        } else {
          v = bits_float(sign | ((exp16 - 15 + 127) << 23) | ((h & 0x3ffu) << 13) | 0x1000u);
        }
        break;
      }
      default: {
        // Random bits below the fp16 mantissa of a value in the normal range: every rounding case.
        const std::uint32_t low = any_bits(rng) & 0x1fffu;
        v = bits_float((float_bits(std::ldexp(mantissa(rng), exponent(rng) / 2)) ^ low) | sign);
        break;
      }
    }
  }
  return x;
}

// IEEE binary16 bits of f: round to nearest, ties to even; overflow to inf; NaN to a quiet NaN.
inline std::uint16_t reference_fp32_to_fp16(float f) {
  const std::uint32_t bits = float_bits(f);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t exp32 = (bits >> 23) & 0xffu;
  const std::uint32_t mant32 = bits & 0x7fffffu;
  if (exp32 == 0xffu) return sign | (mant32 != 0 ? 0x7e00u : 0x7c00u);
  const int exp16 = static_cast<int>(exp32) - 127 + 15;
  if (exp16 >= 31) return sign | 0x7c00u;

  // Keep `keep` bits of the significand (with its leading one), round the `drop` bits below.
  std::uint32_t significand;
  int drop;
  std::uint32_t base;  // exponent field of the result before any carry from rounding
  if (exp16 > 0) {
    significand = mant32;  // implicit one stays in the exponent field
    drop = 13;
    base = static_cast<std::uint32_t>(exp16) << 10;
  } else {
    // fp16 subnormal, in units of 2^-24: the 24-bit significand shifted right by 14 - exp16.
    if (exp16 < -10) return sign;  // below half the smallest subnormal (or an fp32 subnormal)
    significand = mant32 | 0x800000u;
    drop = 14 - exp16;
    base = 0;
  }
  std::uint32_t q = significand >> drop;
  const std::uint32_t rest = significand & ((1u << drop) - 1);
  const std::uint32_t half = 1u << (drop - 1);
  if (rest > half || (rest == half && (q & 1u) != 0)) ++q;
  // A carry out of the mantissa moves into the exponent field, which is exactly right (up to inf).
  return static_cast<std::uint16_t>(sign | (base + q));
}

// The float with the value of binary16 bits h (exact).
inline float reference_fp16_to_fp32(std::uint16_t h) {
  const std::uint32_t sign = (static_cast<std::uint32_t>(h) & 0x8000u) << 16;
  const std::uint32_t exp16 = (h >> 10) & 0x1fu;
  const std::uint32_t mant16 = h & 0x3ffu;
  if (exp16 == 0x1fu) return bits_float(sign | 0x7f800000u | (mant16 << 13));
  if (exp16 == 0) {
    // Subnormal or zero: mant16 * 2^-24, exact in float.
    return bits_float(float_bits(std::ldexp(static_cast<float>(mant16), -24)) | sign);
  }
  return bits_float(sign | ((exp16 - 15 + 127) << 23) | (mant16 << 13));
}

inline std::vector<Half> all_fp16_bit_patterns() {
  std::vector<Half> all(65536);
  for (std::uint32_t i = 0; i < all.size(); ++i) all[i].bits = static_cast<std::uint16_t>(i);
  return all;
}

// Bitwise equality of two float buffers, reporting the first few differences.
inline ::testing::AssertionResult same_bits(const std::vector<float>& expected,
                                            const std::vector<float>& actual) {
  if (expected.size() != actual.size()) {
    return ::testing::AssertionFailure()
           << "sizes differ: " << expected.size() << " vs " << actual.size();
  }
  std::size_t mismatches = 0;
  auto failure = ::testing::AssertionFailure();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (float_bits(expected[i]) != float_bits(actual[i])) {
      if (++mismatches <= 5) {
        failure << "[" << i << "] expected " << expected[i] << " (0x" << std::hex
                << float_bits(expected[i]) << ") got " << actual[i] << " (0x"
                << float_bits(actual[i]) << std::dec << ")\n";
      }
    }
  }
  if (mismatches == 0) return ::testing::AssertionSuccess();
  return failure << mismatches << " of " << expected.size() << " elements differ";
}

// same_bits, except that a NaN matches any NaN: where two NaNs meet in an add (inf - inf beside a
// NaN input), which one's sign comes out depends on the operand order the compiler picked for a
// commutative add (a vectorised loop may swap them), and a GPU makes its own canonical NaN; C++
// and CUDA promise neither (kernels/nn.h).
inline ::testing::AssertionResult same_bits_or_nan(const std::vector<float>& expected,
                                                   const std::vector<float>& actual) {
  if (expected.size() != actual.size()) return same_bits(expected, actual);
  std::vector<float> e = expected;
  for (std::size_t i = 0; i < e.size(); ++i) {
    if (std::isnan(e[i]) && std::isnan(actual[i])) e[i] = actual[i];
  }
  return same_bits(e, actual);
}

}  // namespace gw::kernels::test_util
