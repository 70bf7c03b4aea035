// The compact sparse wire on the host (Note [Compact sparse wire], kernels/sparse_wire.h): the
// format word for word, round trips at the block edges and the extreme indices, binary16 values
// against the compiler's own conversion, low-bit values (Note [Low-bit wire values]) word for word
// and within their bound, the sender's residual, the bytes per element at the reference MLP's
// sparsity, and every check of a received segment.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/sparse_wire.h"
#include "kernels/stream.h"
#include "tests/kernels/wire_test_inputs.h"

namespace gw::kernels {
namespace {

const Stream kHost = Stream::host();

std::uint32_t bits(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

float from_bits(std::uint32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

// What the wire must carry for v, by the compiler's binary16 (round to nearest even), with the
// finite values clamped to +-65504 first.
float expected_wire_value(float v) {
  if (std::isfinite(v)) v = std::fmax(-65504.0f, std::fmin(65504.0f, v));
  return static_cast<float>(static_cast<_Float16>(v));
}

std::vector<std::uint32_t> encode(const std::vector<std::uint32_t>& idx,
                                  const std::vector<float>& v,
                                  std::uint32_t value_bits = kWireHalfBits) {
  std::vector<std::uint32_t> words(wire_max_words(idx.size(), value_bits), 0xdeadbeefu);
  std::vector<std::uint64_t> scratch(wire_scratch(idx.size()));
  const std::size_t n = encode_wire(idx.data(), idx.size(), v.data(), words.data(), scratch.data(),
                                    kHost, value_bits);
  EXPECT_LE(n, words.size());
  words.resize(n);
  return words;
}

WireCheck decode(const std::vector<std::uint32_t>& words, std::size_t numel, std::size_t max_pairs,
                 std::vector<std::uint32_t>& pairs, bool finite_only = false,
                 std::size_t available = SIZE_MAX, std::uint32_t value_bits = kWireHalfBits) {
  pairs.assign(2 * max_pairs, 0);
  std::vector<std::uint64_t> scratch(wire_scratch(max_pairs));
  return decode_wire(words.data(), std::min(available, words.size()), numel, max_pairs, finite_only,
                     pairs.data(), scratch.data(), kHost, value_bits);
}

// Block b's scale by the Note [Low-bit wire values]: the largest |value|, NaN above infinity.
double block_scale(const std::vector<std::uint32_t>& idx, const std::vector<float>& v,
                   std::size_t b) {
  double s = 0.0;
  for (std::size_t j = b * 32; j < idx.size() && j < b * 32 + 32; ++j) {
    const double a = std::fabs(static_cast<double>(v[idx[j]]));
    if (std::isnan(a) || std::isnan(s)) {
      s = std::numeric_limits<double>::quiet_NaN();
    } else {
      s = std::max(s, a);
    }
  }
  return s;
}

TEST(SparseWire, TheFormatWordForWord) {
  // Indices 3, 4, 10: gaps 3, 0, 5, so 3 bits; values 1, -2, 0.5 as binary16.
  std::vector<float> v(11, 0.0f);
  v[3] = 1.0f;
  v[4] = -2.0f;
  v[10] = 0.5f;
  const std::vector<std::uint32_t> words = encode({3, 4, 10}, v);
  const std::vector<std::uint32_t> expected = {3,  // pairs
                                               3,  // block words: 1 of gaps, 2 of values
                                               3,  // width table: block 0 is 3 bits wide
                                               3u | (0u << 3) | (5u << 6),  // the gaps
                                               0x3c00u | (0xc000u << 16),   // 1.0 and -2.0
                                               0x3800u};  // 0.5, the high half left 0
  EXPECT_EQ(words, expected);
  // No pairs: the header alone.
  EXPECT_EQ(encode({}, v), (std::vector<std::uint32_t>{0, 0}));
  // A run of consecutive indices from 0 has no gap bits at all: v[0..2] are 0, v[3] is 1.
  const std::vector<std::uint32_t> run = encode({0, 1, 2, 3}, v);
  EXPECT_EQ(run, (std::vector<std::uint32_t>{4, 2, 0, 0, 0x3c00u << 16}));
}

TEST(SparseWire, TheLowBitFormatWordForWord) {
  // Indices 3, 4, 10 (gaps 3, 0, 5: 3 bits), values 1, -2, 0.5: scale 2, v / s = 0.5, -1, 0.25.
  std::vector<float> v(11, 0.0f);
  v[3] = 1.0f;
  v[4] = -2.0f;
  v[10] = 0.5f;
  // 4 bits, 8 cells a side: codes 12, 0 (clamped from -1 x 8 + 8 = 0) and 10.
  EXPECT_EQ(encode({3, 4, 10}, v, 4),
            (std::vector<std::uint32_t>{3, 3, 3, 3u | (0u << 3) | (5u << 6), bits(2.0f),
                                        12u | (0u << 4) | (10u << 8)}));
  // 2 bits, 2 cells a side: codes 3, 0 and 2 (0.25 x 2 + 2 = 2.5, floored).
  EXPECT_EQ(encode({3, 4, 10}, v, 2),
            (std::vector<std::uint32_t>{3, 3, 3, 3u | (0u << 3) | (5u << 6), bits(2.0f),
                                        3u | (0u << 2) | (2u << 4)}));
  std::vector<std::uint32_t> pairs;
  ASSERT_TRUE(decode(encode({3, 4, 10}, v, 4), 11, 3, pairs, true, SIZE_MAX, 4).ok());
  // The cell centres: 2 x (12 - 8 + 1/2) / 8, 2 x (0 - 8 + 1/2) / 8, 2 x (10 - 8 + 1/2) / 8.
  EXPECT_EQ(pairs,
            (std::vector<std::uint32_t>{3, bits(1.125f), 4, bits(-1.875f), 10, bits(0.625f)}));
  ASSERT_TRUE(decode(encode({3, 4, 10}, v, 2), 11, 3, pairs, true, SIZE_MAX, 2).ok());
  EXPECT_EQ(pairs, (std::vector<std::uint32_t>{3, bits(1.5f), 4, bits(-1.5f), 10, bits(0.5f)}));
  // No pairs: the header alone, as with binary16; an all-zero block has scale 0 and decodes to 0.
  EXPECT_EQ(encode({}, v, 2), (std::vector<std::uint32_t>{0, 0}));
  ASSERT_TRUE(decode(encode({0, 1}, v, 4), 11, 2, pairs, true, SIZE_MAX, 4).ok());
  EXPECT_EQ(0.0f, from_bits(pairs[1]));
  EXPECT_EQ(0.0f, from_bits(pairs[3]));
  // Any other width is refused.
  const std::vector<std::uint32_t> idx = {3};
  std::vector<std::uint32_t> words(64);
  std::vector<std::uint64_t> scratch(2);
  EXPECT_THROW(encode_wire(idx.data(), 1, v.data(), words.data(), scratch.data(), kHost, 8),
               std::invalid_argument);
}

TEST(SparseWire, LowBitValuesAreCellCentresWithinTheScaleOverTwoToTheBits) {
  for (const std::uint32_t b : {4u, 2u}) {
    const double half = std::ldexp(1.0, static_cast<int>(b) - 1);
    for (const wire_inputs::Case& c : wire_inputs::kCases) {
      for (bool specials : {false, true}) {
        SCOPED_TRACE(c.name() + ", " + std::to_string(b) + " bits" +
                     (specials ? ", with inf and NaN" : ""));
        const std::vector<std::uint32_t> idx = wire_inputs::ascending(c.count, c.numel, 13);
        const std::vector<float> v = wire_inputs::values(c.numel, 14, specials);
        const std::vector<std::uint32_t> words = encode(idx, v, b);
        std::vector<std::uint32_t> pairs;
        const WireCheck check = decode(words, c.numel, c.count, pairs, false, SIZE_MAX, b);
        ASSERT_TRUE(check.ok()) << to_string(check.problem);
        ASSERT_EQ(check.words, words.size());
        for (std::size_t j = 0; j < c.count; ++j) {
          ASSERT_EQ(pairs[2 * j], idx[j]) << "pair " << j;
          const double s = block_scale(idx, v, j / 32), x = v[idx[j]];
          const double got = from_bits(pairs[2 * j + 1]);
          if (!std::isfinite(s)) {
            // An overflow stays one: the block decodes to infinities or NaNs.
            ASSERT_FALSE(std::isfinite(got)) << "pair " << j;
            if (std::isinf(s) && !std::isnan(x)) ASSERT_EQ(std::signbit(got), std::signbit(x));
            continue;
          }
          if (s == 0.0) {
            ASSERT_EQ(got, 0.0) << "pair " << j;
            continue;
          }
          // A cell centre: s times a half-integer level over half, one float rounding.
          const double level = std::floor(got / s * half) + 0.5;
          ASSERT_LE(std::fabs(level), half) << "pair " << j;
          ASSERT_EQ(bits(static_cast<float>(level / half) * static_cast<float>(s)),
                    bits(static_cast<float>(got)))
              << "pair " << j << ": " << got << " of " << s;
          ASSERT_LE(std::fabs(got - x), s / (2.0 * half) * (1.0 + 1e-6))
              << "pair " << j << ": " << x << " sent as " << got << ", scale " << s;
        }
      }
    }
  }
}

TEST(SparseWire, TheSenderKeepsWhatLowBitValuesDrop) {
  const std::size_t numel = 1000;
  const std::vector<float> v = wire_inputs::values(numel, 3, true);
  const std::vector<std::uint32_t> idx = wire_inputs::ascending(300, numel, 4);
  for (const std::uint32_t b : {4u, 2u}) {
    SCOPED_TRACE(std::to_string(b) + " bits");
    std::vector<std::uint32_t> pairs;
    ASSERT_TRUE(decode(encode(idx, v, b), numel, idx.size(), pairs, false, SIZE_MAX, b).ok());
    std::vector<float> x = v;
    keep_wire_error_at(x.data(), idx.data(), idx.size(), kHost, b);
    std::vector<float> sent(numel, 0.0f);
    std::vector<bool> is_sent(numel, false);
    for (std::size_t j = 0; j < idx.size(); ++j) {
      sent[idx[j]] = from_bits(pairs[2 * j + 1]);
      is_sent[idx[j]] = true;
    }
    for (std::size_t i = 0; i < numel; ++i) {
      SCOPED_TRACE("element " + std::to_string(i) + " = " + std::to_string(v[i]));
      if (!is_sent[i]) {
        ASSERT_EQ(bits(x[i]), bits(v[i]));  // untouched
      } else if (!std::isfinite(sent[i])) {
        ASSERT_EQ(bits(x[i]), bits(0.0f));  // its block overflowed: sent as such, nothing kept
      } else {
        ASSERT_EQ(bits(x[i]), bits(v[i] - sent[i]));  // exactly what was not sent
      }
    }
  }
}

TEST(SparseWire, RoundTripsAtBlockEdgesAndExtremeIndices) {
  for (const wire_inputs::Case& c : wire_inputs::kCases) {
    for (bool specials : {false, true}) {
      SCOPED_TRACE(c.name() + (specials ? ", with inf and NaN" : ""));
      const std::vector<std::uint32_t> idx = wire_inputs::ascending(c.count, c.numel, 11);
      const std::vector<float> v = wire_inputs::values(c.numel, 12, specials);
      std::vector<std::uint32_t> words = encode(idx, v);
      words.push_back(0x12345678u);  // a next segment: not read
      std::vector<std::uint32_t> pairs;
      const WireCheck check = decode(words, c.numel, c.count, pairs);
      ASSERT_TRUE(check.ok()) << to_string(check.problem);
      EXPECT_EQ(check.pairs, c.count);
      EXPECT_EQ(check.words, words.size() - 1);
      for (std::size_t j = 0; j < c.count; ++j) {
        ASSERT_EQ(pairs[2 * j], idx[j]) << "pair " << j;
        const float want = expected_wire_value(v[idx[j]]), got = from_bits(pairs[2 * j + 1]);
        if (std::isnan(want)) {
          ASSERT_TRUE(std::isnan(got)) << "pair " << j;
        } else {
          ASSERT_EQ(bits(got), bits(want)) << "pair " << j << ": " << v[idx[j]];
        }
      }
    }
  }
}

TEST(SparseWire, ThirtyTwoBitGapsDecode) {
  // Gaps of 2^32 - 2: block width 32, each gap across a whole word. Hand-made, as no v can be
  // read at such indices.
  const std::vector<std::uint32_t> words = {2, 3, 32, 0, 0xfffffffdu, 0x3c003c00u};
  std::vector<std::uint32_t> pairs;
  const WireCheck check = decode(words, 0xffffffffu, 2, pairs);
  ASSERT_TRUE(check.ok()) << to_string(check.problem);
  EXPECT_EQ(pairs, (std::vector<std::uint32_t>{0, bits(1.0f), 0xfffffffeu, bits(1.0f)}));
}

TEST(SparseWire, TheSenderKeepsWhatTheWireDrops) {
  const std::size_t numel = 1000;
  const std::vector<float> v = wire_inputs::values(numel, 3, true);
  const std::vector<std::uint32_t> idx = wire_inputs::ascending(300, numel, 4);
  std::vector<std::uint32_t> all(numel);
  for (std::size_t i = 0; i < numel; ++i) all[i] = static_cast<std::uint32_t>(i);
  std::vector<float> x = v;
  keep_wire_error_at(x.data(), idx.data(), idx.size(), kHost);
  std::vector<bool> sent(numel, false);
  for (std::uint32_t i : idx) sent[i] = true;
  for (std::size_t i = 0; i < numel; ++i) {
    SCOPED_TRACE("element " + std::to_string(i) + " = " + std::to_string(v[i]));
    if (!sent[i]) {
      ASSERT_EQ(bits(x[i]), bits(v[i]));  // untouched
    } else if (!std::isfinite(v[i])) {
      ASSERT_EQ(bits(x[i]), bits(0.0f));  // sent as itself; nothing kept
    } else if (std::fabs(v[i]) <= 65504.0f) {
      // sent + kept == the value, exactly: binary16 drops low bits a float difference holds.
      ASSERT_EQ(bits(expected_wire_value(v[i]) + x[i]), bits(v[i]));
    } else {
      ASSERT_EQ(bits(x[i]), bits(v[i] - std::copysign(65504.0f, v[i])));  // the clamp's excess
    }
  }
}

TEST(SparseWire, AtMostFourBytesPerElementAtTheMlpSparsity) {
  // The reference MLP's two large layers (784 x 1024, 1024 x 512) at sparsity 0.999, indices
  // uniformly random (a gradient's top 0.1% has no structure the coding could use).
  for (const auto& [numel, k] :
       {std::pair<std::size_t, std::size_t>{802'816, 803}, {524'288, 525}}) {
    const std::vector<std::uint32_t> idx = wire_inputs::ascending(k, numel, 21, false);
    const std::vector<float> v(numel, 0.25f);
    const double bytes = 4.0 * static_cast<double>(encode(idx, v).size()) / static_cast<double>(k);
    std::printf("numel %zu, %zu pairs: %.3f bytes per element (pairs format: 8 + 4 / %zu)\n", numel,
                k, bytes, k);
    EXPECT_LE(bytes, 4.0);
    // Low-bit values (Note [Low-bit wire values]): the same gaps, a 32-bit scale per 32 values and
    // b bits each instead of 16.
    const double b4 = 4.0 * static_cast<double>(encode(idx, v, 4).size()) / static_cast<double>(k);
    const double b2 = 4.0 * static_cast<double>(encode(idx, v, 2).size()) / static_cast<double>(k);
    std::printf("  4-bit values: %.3f bytes per element; 2-bit: %.3f\n", b4, b2);
    // A full block: 5 words against 16, and 2 fewer at 2 bits; the last block may save less.
    EXPECT_LE(b4, bytes - 44.0 / 32 + 8.0 / k);
    EXPECT_LE(b2, b4 - 8.0 / 32 + 8.0 / k);
  }
}

TEST(SparseWire, EveryFlawOfAReceivedSegmentIsFound) {
  const std::size_t numel = 1000;
  const std::vector<float> v = wire_inputs::values(numel, 5, true);
  const std::vector<std::uint32_t> idx = wire_inputs::ascending(70, numel, 6);  // 3 blocks
  const std::vector<std::uint32_t> good = encode(idx, v);
  std::vector<std::uint32_t> pairs;
  ASSERT_TRUE(decode(good, numel, 70, pairs).ok());

  EXPECT_EQ(decode(good, numel, 70, pairs, false, 1).problem, WireProblem::kTruncated);
  WireCheck c = decode(good, numel, 70, pairs, false, good.size() - 1);
  EXPECT_EQ(c.problem, WireProblem::kTruncated);
  EXPECT_EQ(c.words, good.size());

  c = decode(good, numel, 69, pairs);
  EXPECT_EQ(c.problem, WireProblem::kTooManyPairs);
  EXPECT_EQ(c.value, 70u);

  std::vector<std::uint32_t> bad = good;
  bad[2] = (bad[2] & ~0xff00u) | (33u << 8);  // block 1 33 bits wide
  c = decode(bad, numel, 70, pairs);
  EXPECT_EQ(c.problem, WireProblem::kBadWidth);
  EXPECT_EQ(c.position, 1u);
  EXPECT_EQ(c.value, 33u);
  bad = good;
  bad[2] |= 7u << 24;  // the byte after the third (last) block
  c = decode(bad, numel, 70, pairs);
  EXPECT_EQ(c.problem, WireProblem::kBadWidth);
  EXPECT_EQ(c.position, 3u);

  bad = good;
  bad[2] = (bad[2] & ~0xffu) | (((bad[2] & 0xffu) + 1) & 0xffu);  // block 0 a bit wider
  bad.push_back(0);
  bad.push_back(0);
  c = decode(bad, numel, 70, pairs);
  EXPECT_EQ(c.problem, WireProblem::kWrongBlockWords);
  EXPECT_EQ(c.value, good[1]);
  EXPECT_GT(c.expected, good[1]);

  // The same segment read as a tensor one element shorter than its last index needs.
  c = decode(good, idx.back(), 70, pairs);
  EXPECT_EQ(c.problem, WireProblem::kIndexOutOfRange);
  EXPECT_EQ(c.position, 69u);
  EXPECT_EQ(c.value, idx.back());
  // Gaps summing past 2^32: reported as 2^32 - 1, never wrapped round into range.
  const std::vector<std::uint32_t> wraps = {2, 3, 32, 0xfffffff0u, 0x20u, 0x3c003c00u};
  c = decode(wraps, 0xffffffffu, 2, pairs);
  EXPECT_EQ(c.problem, WireProblem::kIndexOutOfRange);
  EXPECT_EQ(c.position, 1u);
  EXPECT_EQ(c.value, 0xffffffffu);

  // An infinity or a NaN: a flaw only when the caller asks for finite values.
  std::vector<float> w(numel, 1.0f);
  w[idx[5]] = std::numeric_limits<float>::infinity();
  const std::vector<std::uint32_t> with_inf = encode(idx, w);
  EXPECT_TRUE(decode(with_inf, numel, 70, pairs).ok());
  c = decode(with_inf, numel, 70, pairs, true);
  EXPECT_EQ(c.problem, WireProblem::kNonFiniteValue);
  EXPECT_EQ(c.position, 5u);
  EXPECT_EQ(c.value, 0x7c00u);

  // On a low-bit wire the infinity makes its block's scale infinite: every pair of block 0 decodes
  // to an infinity, the first of them is the one reported.
  const std::vector<std::uint32_t> low_inf = encode(idx, w, 4);
  EXPECT_TRUE(decode(low_inf, numel, 70, pairs, false, SIZE_MAX, 4).ok());
  c = decode(low_inf, numel, 70, pairs, true, SIZE_MAX, 4);
  EXPECT_EQ(c.problem, WireProblem::kNonFiniteValue);
  EXPECT_EQ(c.position, 0u);
  // A segment read with the wrong value width: its block lengths do not add up.
  c = decode(encode(idx, v, 4), numel, 70, pairs, false, SIZE_MAX, 2);
  EXPECT_EQ(c.problem, WireProblem::kWrongBlockWords);
}

TEST(SparseWire, SizesBeyondThirtyTwoBitsAreRefused) {
  std::vector<std::uint32_t> pairs(2);
  const std::uint32_t words[2] = {0, 0};
  EXPECT_THROW(decode_wire(words, 2, std::size_t{1} << 32, 1, false, pairs.data(), nullptr, kHost),
               std::invalid_argument);
  EXPECT_THROW(encode_wire(nullptr, std::size_t{3} << 30, nullptr, nullptr, nullptr, kHost),
               std::invalid_argument);
}

}  // namespace
}  // namespace gw::kernels
