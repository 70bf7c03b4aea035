// kernels/sparse.h, kernels/update.h and TopkSelector on a CUDA stream, against the host stream
// (which kernels_cpu_test checks against scalar references, and kernels_thrust_omp_test checks the
// same Thrust algorithms against): what only a GPU can check is the stream plumbing and nvcc's
// arithmetic. Built whenever nvcc is found; skips when no CUDA device is usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/sparse.h"
#include "kernels/sparse_wire.h"
#include "kernels/stream.h"
#include "kernels/topk.h"
#include "kernels/update.h"
#include "tests/kernels/cuda_test_util.h"
#include "tests/kernels/kernels_test_util.h"
#include "tests/kernels/sparse_test_inputs.h"
#include "tests/kernels/wire_test_inputs.h"

namespace gw::kernels {
namespace {

using test_inputs::Dist;
using test_inputs::kAllDists;
using test_inputs::make_values;
using test_util::DeviceCopy;
using test_util::same_bits;

const Stream kHost = Stream::host();

class CudaSparseTest : public test_util::CudaStreamTest {};

TEST_F(CudaSparseTest, MomentumMatchesCpuBitForBit) {
  for (std::size_t n : test_inputs::kSizes) {
    for (bool nesterov : {false, true}) {
      const std::vector<float> g = make_values(Dist::kNormal, n, 1);
      std::vector<float> u = make_values(Dist::kWideRange, n, 2),
                         v = make_values(Dist::kNormal, n, 3);
      DeviceCopy<float> dg(g, stream_), du(u, stream_), dv(v, stream_);
      momentum_accumulate(dg.get(), du.get(), dv.get(), n, 0.9f, nesterov, stream_);
      momentum_accumulate(g.data(), u.data(), v.data(), n, 0.9f, nesterov, kHost);
      EXPECT_TRUE(same_bits(u, du.to_host()));
      EXPECT_TRUE(same_bits(v, dv.to_host()));
      std::vector<float> g2 = g;
      DeviceCopy<float> dg2(g2, stream_);
      momentum_to(dg2.get(), du.get(), dg2.get(), n, 0.9f, nesterov, stream_);
      momentum_to(g2.data(), u.data(), g2.data(), n, 0.9f, nesterov, kHost);
      EXPECT_TRUE(same_bits(u, du.to_host()));
      EXPECT_TRUE(same_bits(g2, dg2.to_host()));
    }
  }
}

TEST_F(CudaSparseTest, ClipAndLocalSgdMatchCpu) {
  for (std::size_t n : test_inputs::kSizes) {
    std::vector<float> g = make_values(Dist::kNormal, n, 4);
    DeviceCopy<float> dg(g, stream_);
    const double norm = clip_by_norm(g.data(), n, 1.0, kHost);
    const double dnorm = clip_by_norm(dg.get(), n, 1.0, stream_);
    EXPECT_NEAR(norm, dnorm, 1e-12 * norm);
    if (static_cast<float>(1.0 / norm) == static_cast<float>(1.0 / dnorm)) {
      EXPECT_TRUE(same_bits(g, dg.to_host()));
    }
    const std::vector<float> w = make_values(Dist::kNormal, n, 5),
                             a = make_values(Dist::kUniform, n, 6);
    std::vector<float> d(n), w2 = w, a2 = a, s(n);
    DeviceCopy<float> dw(w, stream_), da(a, stream_), dd(d, stream_), ds(s, stream_);
    subtract(w.data(), a.data(), d.data(), n, kHost);
    subtract(dw.get(), da.get(), dd.get(), n, stream_);
    EXPECT_TRUE(same_bits(d, dd.to_host()));
    add_to_anchor(d.data(), w2.data(), a2.data(), n, kHost);
    add_to_anchor(dd.get(), dw.get(), da.get(), n, stream_);
    EXPECT_TRUE(same_bits(w2, dw.to_host()));
    EXPECT_TRUE(same_bits(a2, da.to_host()));
    for (OuterRule rule : {OuterRule::kNesterov, OuterRule::kHeavyBall, OuterRule::kAverage}) {
      std::vector<float> ow(n), oa = a, ou = w;
      DeviceCopy<float> dow(ow, stream_), doa(oa, stream_), dou(ou, stream_), dx(d, stream_);
      outer_step(d.data(), 0.5f, true, ow.data(), oa.data(), ou.data(), n, {rule, 0.7f, 0.9f},
                 kHost);
      outer_step(dx.get(), 0.5f, true, dow.get(), doa.get(), dou.get(), n, {rule, 0.7f, 0.9f},
                 stream_);
      EXPECT_TRUE(same_bits(ow, dow.to_host()));
      EXPECT_TRUE(same_bits(ou, dou.to_host()));
    }
    scale_to(w.data(), 0.125f, s.data(), n, kHost);
    DeviceCopy<float> dw0(w, stream_);
    scale_to(dw0.get(), 0.125f, ds.get(), n, stream_);
    EXPECT_TRUE(same_bits(s, ds.to_host()));
    std::vector<Half> h(n);
    DeviceCopy<Half> dh(h, stream_);
    scale_to_fp16(w.data(), 0.5f, h.data(), n, kHost);
    scale_to_fp16(dw0.get(), 0.5f, dh.get(), n, stream_);
    const std::vector<Half> back = dh.to_host();
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(h[i].bits, back[i].bits) << i;
  }
}

TEST_F(CudaSparseTest, ExactTopkBySortMatchesCpu) {
  for (std::size_t n : test_inputs::kSizes) {
    if (n == 0) continue;  // k >= 1
    for (Dist dist : kAllDists) {
      SCOPED_TRACE(testing::Message() << "n " << n << " " << test_inputs::dist_name(dist));
      const std::vector<float> v = make_values(dist, n, 8);
      DeviceCopy<float> dv(v, stream_);
      for (std::size_t k : {std::size_t{1}, (n + 999) / 1000, n}) {
        std::vector<std::uint32_t> idx(n), scratch(n);
        DeviceCopy<std::uint32_t> didx(idx, stream_), dscratch(scratch, stream_);
        const std::uint32_t kth =
            exact_topk_by_sort(v.data(), n, k, idx.data(), scratch.data(), kHost);
        ASSERT_EQ(exact_topk_by_sort(dv.get(), n, k, didx.get(), dscratch.get(), stream_), kth);
        const std::vector<std::uint32_t> back = didx.to_host();
        ASSERT_TRUE(std::equal(idx.begin(), idx.begin() + k, back.begin())) << "k " << k;
      }
    }
  }
}

TEST_F(CudaSparseTest, SelectionPrimitivesMatchCpu) {
  for (std::size_t n : test_inputs::kSizes) {
    for (Dist dist : kAllDists) {
      SCOPED_TRACE(testing::Message() << "n " << n << " " << test_inputs::dist_name(dist));
      const std::vector<float> v = make_values(dist, n, 7);
      DeviceCopy<float> dv(v, stream_);
      std::vector<std::uint32_t> keys(n), scratch(n);
      DeviceCopy<std::uint32_t> dkeys(keys, stream_), dscratch(scratch, stream_);
      magnitude_keys(v.data(), n, keys.data(), kHost);
      magnitude_keys(dv.get(), n, dkeys.get(), stream_);
      ASSERT_EQ(keys, dkeys.to_host());
      if (n >= 16) {
        std::vector<std::uint32_t> sample(16 * 50);
        DeviceCopy<std::uint32_t> dsample(sample, stream_);
        sample_magnitude_keys(v.data(), n, 50, 3, sample.data(), kHost);
        sample_magnitude_keys(dv.get(), n, 50, 3, dsample.get(), stream_);
        ASSERT_EQ(sample, dsample.to_host());
      }
      if (n == 0) continue;
      const std::uint32_t t = kth_largest_key(keys.data(), n, (n + 9) / 10, scratch.data(), kHost);
      ASSERT_EQ(kth_largest_key(dkeys.get(), n, (n + 9) / 10, dscratch.get(), stream_), t);
      std::vector<std::uint32_t> idx(n);
      DeviceCopy<std::uint32_t> didx(idx, stream_);
      const std::size_t count = select_at_least(v.data(), n, t, idx.data(), kHost);
      ASSERT_EQ(count_at_least(dv.get(), n, t, stream_), count);
      ASSERT_EQ(select_at_least(dv.get(), n, t, didx.get(), stream_), count);
      std::vector<std::uint32_t> back = didx.to_host();
      ASSERT_TRUE(std::equal(idx.begin(), idx.begin() + count, back.begin()));
      const std::size_t k = (count + 1) / 2;
      const std::uint32_t kth = keep_top_k(v.data(), idx.data(), count, k, scratch.data(), kHost);
      ASSERT_EQ(keep_top_k(dv.get(), didx.get(), count, k, dscratch.get(), stream_), kth);
      back = didx.to_host();
      ASSERT_TRUE(std::equal(idx.begin(), idx.begin() + k, back.begin()));

      std::vector<std::uint32_t> words(2 * k);
      DeviceCopy<std::uint32_t> dwords(words, stream_);
      pack_pairs(idx.data(), k, v.data(), words.data(), kHost);
      pack_pairs(didx.get(), k, dv.get(), dwords.get(), stream_);
      ASSERT_EQ(words, dwords.to_host());
      const PairsCheck check = check_sparse_pairs(dwords.get(), k, n, stream_);
      ASSERT_TRUE(check.ok());
      if (idx[k - 1] == n - 1) {  // outside a tensor one element shorter
        ASSERT_EQ(check_sparse_pairs(dwords.get(), k, n - 1, stream_).problem,
                  PairsProblem::kIndexOutOfRange);
      }
      std::vector<float> x = make_values(Dist::kNormal, n, 8);
      DeviceCopy<float> dx(x, stream_);
      scatter_add_pairs(words.data(), k, x.data(), kHost);
      scatter_add_pairs(dwords.get(), k, dx.get(), stream_);
      // A sum with a NaN is a NaN, but a GPU makes its own canonical one (0x7fffffff).
      ASSERT_TRUE(test_util::same_bits_or_nan(x, dx.to_host()));
      zero_at(x.data(), idx.data(), k, kHost);
      zero_at(dx.get(), didx.get(), k, stream_);
      ASSERT_TRUE(same_bits(x, dx.to_host()));

      const std::uint32_t region = static_cast<std::uint32_t>((n + 2) / 3);
      std::vector<std::uint32_t> rel(k), starts(4);
      DeviceCopy<std::uint32_t> drel(rel, stream_), dstarts(starts, stream_);
      split_by_region(idx.data(), k, region, 3, rel.data(), starts.data(), kHost);
      split_by_region(didx.get(), k, region, 3, drel.get(), dstarts.get(), stream_);
      ASSERT_EQ(rel, drel.to_host());
      ASSERT_EQ(starts, dstarts.to_host());
    }
  }
}

// The compact sparse wire (kernels/sparse_wire.h) on the stream, binary16 and low-bit values: the
// CPU's words, pairs, residual and findings (the algorithms themselves are checked under OpenMP:
// ThrustOmpWire).
TEST_F(CudaSparseTest, CompactWireMatchesCpu) {
  for (const std::uint32_t bits : {16u, 4u, 2u}) {
    for (const wire_inputs::Case& c : wire_inputs::kCases) {
      SCOPED_TRACE(c.name() + ", " + std::to_string(bits) + "-bit values");
      const std::vector<std::uint32_t> idx = wire_inputs::ascending(c.count, c.numel, 41);
      const std::vector<float> v = wire_inputs::values(c.numel, 42, true);
      std::vector<std::uint32_t> words(wire_max_words(c.count, bits));
      std::vector<std::uint64_t> scratch(wire_scratch(c.count));
      const std::size_t n =
          encode_wire(idx.data(), c.count, v.data(), words.data(), scratch.data(), kHost, bits);
      DeviceCopy<std::uint32_t> didx(idx, stream_), dwords(words, stream_);
      DeviceCopy<float> dv(v, stream_);
      DeviceCopy<std::uint64_t> dscratch(scratch, stream_);
      ASSERT_EQ(
          encode_wire(didx.get(), c.count, dv.get(), dwords.get(), dscratch.get(), stream_, bits),
          n);
      std::vector<std::uint32_t> back = dwords.to_host();
      words.resize(n);
      back.resize(n);
      ASSERT_EQ(words, back);

      for (const std::size_t numel : {c.numel, c.count > 0 ? std::size_t{idx.back()} : c.numel}) {
        std::vector<std::uint32_t> pairs(2 * c.count);
        const WireCheck want = decode_wire(words.data(), n, numel, c.count, true, pairs.data(),
                                           scratch.data(), kHost, bits);
        DeviceCopy<std::uint32_t> dpairs(pairs, stream_);
        const WireCheck got = decode_wire(dwords.get(), n, numel, c.count, true, dpairs.get(),
                                          dscratch.get(), stream_, bits);
        ASSERT_EQ(got.problem, want.problem) << to_string(got.problem);
        ASSERT_EQ(got.position, want.position);
        ASSERT_EQ(got.value, want.value);
        if (want.ok()) ASSERT_EQ(dpairs.to_host(), pairs);
      }

      std::vector<float> x = v;
      DeviceCopy<float> dx(v, stream_);
      keep_wire_error_at(x.data(), idx.data(), c.count, kHost, bits);
      keep_wire_error_at(dx.get(), didx.get(), c.count, stream_, bits);
      ASSERT_TRUE(same_bits(x, dx.to_host()));
    }
  }
}

TEST_F(CudaSparseTest, CheckSparsePairsFindsTheFirstBadPair) {
  const std::vector<std::uint32_t> pairs = {0, 0, 5, 0, 5, 0, 99, 0};
  DeviceCopy<std::uint32_t> d(pairs, stream_);
  const PairsCheck c = check_sparse_pairs(d.get(), 4, 10, stream_);
  EXPECT_EQ(c.problem, PairsProblem::kNotIncreasing);
  EXPECT_EQ(c.position, 2u);
  EXPECT_EQ(c.index, 5u);
  EXPECT_EQ(c.previous_index, 5u);
  const PairsCheck range = check_sparse_pairs(d.get() + 4, 2, 10, stream_);
  EXPECT_EQ(range.problem, PairsProblem::kIndexOutOfRange);
  EXPECT_EQ(range.position, 1u);
  EXPECT_EQ(range.index, 99u);
}

TEST_F(CudaSparseTest, TopkSelectorSelectsTheHostIndices) {
  for (std::size_t n :
       {std::size_t{0}, std::size_t{1000}, std::size_t{100'003}, std::size_t{1'000'003}}) {
    for (Dist dist : kAllDists) {
      const std::vector<float> v = make_values(dist, n, 9);
      DeviceCopy<float> dv(v, stream_);
      TopkSelector host, device;
      for (std::size_t k : test_inputs::ks_for(n)) {
        SCOPED_TRACE(testing::Message()
                     << "n " << n << " " << test_inputs::dist_name(dist) << " k " << k);
        std::vector<std::uint32_t> out(std::min(k, n));
        DeviceCopy<std::uint32_t> dout(out, stream_);
        const std::size_t count = host.select(v.data(), n, k, 0.01, k, out.data());
        ASSERT_EQ(device.select(dv.get(), n, k, 0.01, k, dout.get(), stream_), count);
        const std::vector<std::uint32_t> back = dout.to_host();
        ASSERT_TRUE(std::equal(out.begin(), out.begin() + count, back.begin()));
        EXPECT_EQ(device.last_stats().rescans, host.last_stats().rescans);
        EXPECT_EQ(device.last_stats().exact_fallback, host.last_stats().exact_fallback);
      }
    }
  }
}

}  // namespace
}  // namespace gw::kernels
