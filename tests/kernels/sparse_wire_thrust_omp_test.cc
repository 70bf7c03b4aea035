// The compact sparse wire's device algorithms (kernels/thrust/sparse_wire_thrust.h) under Thrust's
// OpenMP system against the CPU ones (Note [One algorithm source]): the same words, the same
// decoded pairs, the same residual and the same finding for every flawed segment.
#include <gtest/gtest.h>
#include <thrust/system/omp/execution_policy.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cpu/sparse_wire_cpu.h"
#include "kernels/thrust/sparse_wire_thrust.h"
#include "tests/kernels/wire_test_inputs.h"

namespace gw::kernels {
namespace {

const auto& omp = thrust::omp::par;

bool same_check(const WireCheck& a, const WireCheck& b) {
  return a.problem == b.problem && a.pairs == b.pairs && a.words == b.words &&
         a.position == b.position && a.value == b.value && a.expected == b.expected;
}

// Decodes `words` both ways and expects the same finding, and the same pairs when well formed.
void expect_same_decode(const std::vector<std::uint32_t>& words, std::size_t available,
                        std::size_t numel, std::size_t max_pairs, bool finite_only,
                        std::uint32_t bits = kWireHalfBits) {
  std::vector<std::uint32_t> pairs(2 * max_pairs), pairs2(2 * max_pairs);
  std::vector<std::uint64_t> scratch(wire_scratch(max_pairs)), scratch2(wire_scratch(max_pairs));
  const WireCheck a = cpu::decode_wire(words.data(), available, numel, max_pairs, finite_only,
                                       pairs.data(), scratch.data(), bits);
  const WireCheck b = thrust_algo::decode_wire(omp, words.data(), available, numel, max_pairs,
                                               finite_only, pairs2.data(), scratch2.data(), bits);
  ASSERT_TRUE(same_check(a, b)) << to_string(a.problem) << " against " << to_string(b.problem)
                                << ", position " << a.position << " against " << b.position;
  if (a.ok()) ASSERT_EQ(pairs, pairs2);
}

TEST(ThrustOmpWire, EncodeDecodeAndResidualMatchCpuBitForBit) {
  for (const std::uint32_t bits : {16u, 4u, 2u}) {
    for (const wire_inputs::Case& c : wire_inputs::kCases) {
      for (const bool specials : {false, true}) {
        SCOPED_TRACE(c.name() + ", " + std::to_string(bits) + "-bit values" +
                     (specials ? ", with inf and NaN" : ""));
        const std::vector<std::uint32_t> idx = wire_inputs::ascending(c.count, c.numel, 31);
        const std::vector<float> v = wire_inputs::values(c.numel, 32, specials);
        std::vector<std::uint32_t> words(wire_max_words(c.count, bits)), words2(words.size());
        std::vector<std::uint64_t> scratch(wire_scratch(c.count)), scratch2(scratch.size());
        const std::size_t n =
            cpu::encode_wire(idx.data(), c.count, v.data(), words.data(), scratch.data(), bits);
        const std::size_t n2 = thrust_algo::encode_wire(omp, idx.data(), c.count, v.data(),
                                                        words2.data(), scratch2.data(), bits);
        ASSERT_EQ(n, n2);
        words.resize(n);
        words2.resize(n);
        ASSERT_EQ(words, words2);
        expect_same_decode(words, n, c.numel, c.count, false, bits);
        expect_same_decode(words, n, c.numel, c.count, true, bits);

        std::vector<float> x = v, x2 = v;
        cpu::keep_wire_error_at(x.data(), idx.data(), c.count, bits);
        thrust_algo::keep_wire_error_at(omp, x2.data(), idx.data(), c.count, bits);
        ASSERT_EQ(0, std::memcmp(x.data(), x2.data(), x.size() * sizeof(float)));
      }
    }
  }
}

TEST(ThrustOmpWire, EveryFlawIsFoundAsOnTheCpu) {
  const std::size_t numel = 1000;
  const std::vector<std::uint32_t> idx = wire_inputs::ascending(70, numel, 6);
  std::vector<float> v = wire_inputs::values(numel, 5, false);
  v[idx[5]] = std::numeric_limits<float>::quiet_NaN();
  std::vector<std::uint32_t> good(wire_max_words(70));
  std::vector<std::uint64_t> scratch(wire_scratch(70));
  good.resize(cpu::encode_wire(idx.data(), 70, v.data(), good.data(), scratch.data(), 16));

  expect_same_decode(good, 1, numel, 70, false);                 // header cut short
  expect_same_decode(good, good.size() - 1, numel, 70, false);   // segment cut short
  expect_same_decode(good, good.size(), numel, 69, false);       // too many pairs
  expect_same_decode(good, good.size(), idx.back(), 70, false);  // an index out of range
  expect_same_decode(good, good.size(), numel, 70, true);        // a NaN
  std::vector<std::uint32_t> bad = good;
  bad[2] = (bad[2] & ~0xff00u) | (40u << 8);
  expect_same_decode(bad, bad.size(), numel, 70, false);  // a width above 32
  bad = good;
  bad[2] |= 1u << 24;
  expect_same_decode(bad, bad.size(), numel, 70, false);  // a byte after the last block
  bad = good;
  bad[1] += 1;
  bad.push_back(0);
  expect_same_decode(bad, bad.size(), numel, 70, false);     // block words off by one
  expect_same_decode({0, 3, 0, 0, 0}, 5, numel, 70, false);  // no pairs, yet block words
  expect_same_decode({2, 3, 32, 0xfffffff0u, 0x20u, 0x3c003c00u}, 6, 0xffffffffu, 2,
                     false);  // gaps past 2^32

  // A low-bit segment: its block lengths and its non-finite scale, found alike.
  std::vector<std::uint32_t> low(wire_max_words(70, 2));
  low.resize(cpu::encode_wire(idx.data(), 70, v.data(), low.data(), scratch.data(), 2));
  expect_same_decode(low, low.size(), numel, 70, true, 2);   // a NaN scale
  expect_same_decode(low, low.size(), numel, 70, false, 4);  // read as 4-bit: wrong lengths
}

}  // namespace
}  // namespace gw::kernels
