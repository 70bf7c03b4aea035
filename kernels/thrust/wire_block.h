// One block of the compact sparse wire (Note [Compact sparse wire], kernels/sparse_wire.h): its
// width, size, encoding, index span and decoding, as GW_HOST_DEVICE functions of that block's
// words alone. Internal to kernels/: the CPU loops (kernels/cpu/sparse_wire_cpu.cc) and the Thrust
// algorithms (kernels/thrust/sparse_wire_thrust.h) both call these per block, so the block format
// has one source and the two differ only in how they visit blocks and sum their sizes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/host_device.h"
#include "kernels/sparse_wire.h"
#include "kernels/thrust/float_ops.h"

namespace gw::kernels::wire {

using thrust_algo::bits_float;
using thrust_algo::float_bits;

// binary16 bits the wire carries for v: round to nearest even of v clamped to +-65504 when
// finite; an infinity or a NaN as itself (sign and quiet NaN kept).
GW_HOST_DEVICE inline std::uint16_t half_bits(float v) {
  const std::uint32_t magnitude = float_bits(v) & 0x7fffffffu;
  if (magnitude < 0x7f800000u && magnitude > 0x477fe000u) {  // finite, above 65504
    return static_cast<std::uint16_t>(((float_bits(v) >> 16) & 0x8000u) | 0x7bffu);
  }
  return thrust_algo::fp32_to_fp16_bits(v);
}

// The float a binary16 is (exact: every binary16 is a float), by integer operations.
GW_HOST_DEVICE inline float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  if (exp == 0x1fu) return bits_float(sign | 0x7f800000u | (mant << 13));
  if (exp != 0) return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return bits_float(sign);
  // Subnormal: m x 2^-24; normalise the mantissa.
  std::uint32_t e = 113;
  while ((mant & 0x400u) == 0) {
    mant <<= 1;
    --e;
  }
  return bits_float(sign | (e << 23) | ((mant & 0x3ffu) << 13));
}

GW_HOST_DEVICE inline bool half_is_finite(std::uint16_t h) { return (h & 0x7c00u) != 0x7c00u; }

// Pairs in block b of a segment of c pairs.
GW_HOST_DEVICE inline std::size_t block_pairs(std::size_t c, std::size_t b) {
  const std::size_t first = b * kWireBlockPairs;
  return c - first < kWireBlockPairs ? c - first : kWireBlockPairs;
}

// Words of a block of n pairs, gap width w and value_bits bits per value.
GW_HOST_DEVICE inline std::size_t block_words(std::size_t n, std::uint32_t w, std::uint32_t bits) {
  return (n * w + 31) / 32 + wire_value_words(n, bits);
}

// Note [Low-bit wire values], kernels/sparse_wire.h: the scale, the code and the value it stands
// for. The scale is the largest magnitude key of the block's values (NaN above infinity).
GW_HOST_DEVICE inline float block_scale(const std::uint32_t* indices, std::size_t c, std::size_t b,
                                        const float* v) {
  const std::size_t first = b * kWireBlockPairs, n = block_pairs(c, b);
  std::uint32_t key = 0;
  for (std::size_t j = first; j < first + n; ++j) {
    const std::uint32_t k = thrust_algo::magnitude_key(v[indices[j]]);
    key = k > key ? k : key;
  }
  return bits_float(key);
}

GW_HOST_DEVICE inline bool scale_finite(float s) {
  return (float_bits(s) & 0x7f800000u) != 0x7f800000u;
}

// The b-bit code of v under scale s. A scale that is 0 or not finite codes only the sign.
GW_HOST_DEVICE inline std::uint32_t value_code(float v, float s, std::uint32_t bits) {
  const std::int32_t half = std::int32_t{1} << (bits - 1);
  const bool negative = (float_bits(v) >> 31) != 0;
  if (!scale_finite(s) || float_bits(s) == 0) return negative ? 0u : 2u * half - 1u;
  // |v| <= s, so v / s is in [-1, 1] and t in [0, 2 half]; the cast truncates, a floor here.
  const float t =
      thrust_algo::add_rn(thrust_algo::mul_rn(thrust_algo::div_rn(v, s), static_cast<float>(half)),
                          static_cast<float>(half));
  std::int32_t q = static_cast<std::int32_t>(t);
  if (q < 0) q = 0;
  if (q > 2 * half - 1) q = 2 * half - 1;
  return static_cast<std::uint32_t>(q);
}

// The value code q stands for under scale s: s (q - half + 1/2) / half (the level is exact).
GW_HOST_DEVICE inline float code_value(std::uint32_t q, float s, std::uint32_t bits) {
  const std::int32_t half = std::int32_t{1} << (bits - 1);
  const float level =
      thrust_algo::div_rn(static_cast<float>(2 * (static_cast<std::int32_t>(q) - half) + 1),
                          static_cast<float>(2 * half));
  return thrust_algo::mul_rn(level, s);
}

// Gap of pair j: index_j - index_{j-1} - 1, index_{-1} = -1.
GW_HOST_DEVICE inline std::uint32_t gap(const std::uint32_t* indices, std::size_t j) {
  return j == 0 ? indices[0] : indices[j] - indices[j - 1] - 1u;
}

// The fewest bits that hold every gap of block b.
GW_HOST_DEVICE inline std::uint32_t block_width(const std::uint32_t* indices, std::size_t c,
                                                std::size_t b) {
  const std::size_t first = b * kWireBlockPairs, n = block_pairs(c, b);
  std::uint32_t all = 0;
  for (std::size_t j = first; j < first + n; ++j) all |= gap(indices, j);
  std::uint32_t w = 0;
  while (w < 32 && (all >> w) != 0) ++w;
  return w;
}

// Writes block b (width w) to out[0..block_words).
GW_HOST_DEVICE inline void encode_block(const std::uint32_t* indices, std::size_t c, std::size_t b,
                                        const float* v, std::uint32_t w, std::uint32_t bits,
                                        std::uint32_t* out) {
  const std::size_t first = b * kWireBlockPairs, n = block_pairs(c, b);
  const std::size_t gap_words = (n * w + 31) / 32;
  for (std::size_t i = 0; i < block_words(n, w, bits); ++i) out[i] = 0;
  if (w > 0) {
    for (std::size_t j = 0; j < n; ++j) {
      const std::uint64_t g = gap(indices, first + j);
      const std::size_t bit = j * w, word = bit / 32, shift = bit % 32;
      out[word] |= static_cast<std::uint32_t>(g << shift);
      if (shift + w > 32) out[word + 1] |= static_cast<std::uint32_t>(g >> (32 - shift));
    }
  }
  if (bits != kWireHalfBits) {
    const float s = block_scale(indices, c, b, v);
    out[gap_words] = float_bits(s);
    for (std::size_t j = 0; j < n; ++j) {
      const std::size_t bit = j * bits;
      out[gap_words + 1 + bit / 32] |= value_code(v[indices[first + j]], s, bits) << (bit % 32);
    }
    return;
  }
  for (std::size_t j = 0; j < n; ++j) {
    const std::uint32_t h = half_bits(v[indices[first + j]]);
    out[gap_words + j / 2] |= h << (16 * (j % 2));
  }
}

// Gap j of a block whose gap words start at `in`, width w (1..32).
GW_HOST_DEVICE inline std::uint64_t read_gap(const std::uint32_t* in, std::size_t j,
                                             std::uint32_t w) {
  const std::size_t bit = j * w, word = bit / 32, shift = bit % 32;
  std::uint64_t g = in[word] >> shift;
  if (shift + w > 32) g |= static_cast<std::uint64_t>(in[word + 1]) << (32 - shift);
  return w == 32 ? g & 0xffffffffull : g & ((std::uint64_t{1} << w) - 1);
}

// How far block b's pairs move the index: the sum of (gap + 1) over them.
GW_HOST_DEVICE inline std::uint64_t block_span(const std::uint32_t* in, std::size_t n,
                                               std::uint32_t w) {
  std::uint64_t span = n;
  if (w > 0) {
    for (std::size_t j = 0; j < n; ++j) span += read_gap(in, j, w);
  }
  return span;
}

// Decodes a block of n pairs, width w, whose first index is base + its first gap, to
// pairs[0..2n) as (index, float bits); an index that does not fit 32 bits is written 2^32 - 1.
// Returns the next block's base: its last index + 1 (base + block_span).
GW_HOST_DEVICE inline std::uint64_t decode_block(const std::uint32_t* in, std::size_t n,
                                                 std::uint32_t w, std::uint32_t bits,
                                                 std::uint64_t base, std::uint32_t* pairs) {
  const std::size_t gap_words = (n * w + 31) / 32;
  const float s = bits == kWireHalfBits ? 0.0f : bits_float(in[gap_words]);
  const std::uint32_t mask = (std::uint32_t{1} << (bits % 32)) - 1u;
  std::uint64_t next = base;
  for (std::size_t j = 0; j < n; ++j) {
    const std::uint64_t index = next + (w > 0 ? read_gap(in, j, w) : 0);
    next = index + 1;
    pairs[2 * j] = index > 0xffffffffull ? 0xffffffffu : static_cast<std::uint32_t>(index);
    if (bits == kWireHalfBits) {
      const auto h = static_cast<std::uint16_t>(in[gap_words + j / 2] >> (16 * (j % 2)));
      pairs[2 * j + 1] = float_bits(half_to_float(h));
    } else {
      const std::size_t bit = j * bits;
      const std::uint32_t q = (in[gap_words + 1 + bit / 32] >> (bit % 32)) & mask;
      pairs[2 * j + 1] = float_bits(code_value(q, s, bits));
    }
  }
  return next;
}

// Whether a decoded value (float bits) is finite.
GW_HOST_DEVICE inline bool value_finite(std::uint32_t bits) {
  return (bits & 0x7f800000u) != 0x7f800000u;
}

// x -= what the wire carries for x (0 left for an infinity or a NaN).
GW_HOST_DEVICE inline float wire_error(float x) {
  const std::uint16_t h = half_bits(x);
  if (!half_is_finite(h)) return 0.0f;
  return thrust_algo::sub_rn(x, half_to_float(h));
}

// The same on a low-bit wire, for block b of the segment of indices[0..c) (its scale from the
// values before any is changed): each x -= what its code stands for; a non-finite scale leaves 0.
GW_HOST_DEVICE inline void keep_block_error(float* x, const std::uint32_t* indices, std::size_t c,
                                            std::size_t b, std::uint32_t bits) {
  const std::size_t first = b * kWireBlockPairs, n = block_pairs(c, b);
  const float s = block_scale(indices, c, b, x);
  for (std::size_t j = first; j < first + n; ++j) {
    float& v = x[indices[j]];
    v = scale_finite(s) ? thrust_algo::sub_rn(v, code_value(value_code(v, s, bits), s, bits))
                        : 0.0f;
  }
}

// The checks of a segment's header (host code): c pairs and `declared` block words, in
// `available` words, at most max_pairs. Fills check's pairs and words; false with the problem set
// when the segment is too long for its pairs or for what was received.
inline bool header_ok(std::size_t c, std::size_t declared, std::size_t available,
                      std::size_t max_pairs, WireCheck& check) {
  check.pairs = c;
  check.words = 2 + (wire_blocks(c) + 3) / 4 + declared;
  if (c > max_pairs) {
    check.problem = WireProblem::kTooManyPairs;
    check.value = c;
  } else if (check.words > available) {
    check.problem = WireProblem::kTruncated;
  }
  return check.ok();
}

// Width byte t of the table at `table`.
GW_HOST_DEVICE inline std::uint32_t width_byte(const std::uint32_t* table, std::size_t t) {
  return (table[t / 4] >> (8 * (t % 4))) & 0xffu;
}

}  // namespace gw::kernels::wire
