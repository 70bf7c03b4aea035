// The device algorithms of kernels/thrust/ run under Thrust's OpenMP system (thrust::omp::par),
// against the CPU implementation: bit for bit, primitive by primitive, on every size and
// distribution of tests/kernels/sparse_test_inputs.h; and the composed device top-k selector
// against the host TopkSelector, index for index. The same template source is what the CUDA build
// instantiates on a stream (Note [One algorithm source], kernels/thrust/sparse_thrust.h), so this
// checks the device algorithms on machines without a GPU.
#include <gtest/gtest.h>
#include <thrust/system/omp/execution_policy.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/sparse_cpu.h"
#include "kernels/cpu/update_cpu.h"
#include "kernels/thrust/sparse_thrust.h"
#include "kernels/thrust/topk_thrust.h"
#include "kernels/thrust/update_thrust.h"
#include "kernels/topk.h"
#include "tests/kernels/kernels_test_util.h"
#include "tests/kernels/sparse_test_inputs.h"

namespace gw::kernels {
namespace {

using test_inputs::Dist;
using test_inputs::dist_name;
using test_inputs::kAllDists;
using test_inputs::kSizes;
using test_inputs::make_values;
using test_util::float_bits;
using test_util::same_bits;

const auto& omp = thrust::omp::par;

std::vector<std::uint32_t> random_keys(std::size_t n, std::uint32_t seed, std::uint32_t range) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::uint32_t> key(0, range);
  std::vector<std::uint32_t> keys(n);
  for (auto& k : keys) k = key(rng);
  return keys;
}

std::string input_name(std::size_t n, Dist dist) {
  return "n " + std::to_string(n) + ", " + dist_name(dist);
}

// Every size and distribution; the body starts with SCOPED_TRACE(input_name(n, dist)).
#define GW_EACH_INPUT(n, dist) \
  for (std::size_t n : kSizes) \
    for (Dist dist : kAllDists)

// --- kernels/update.h ---------------------------------------------------------------------------

TEST(ThrustOmp, MomentumAccumulateMatchesCpuBitForBit) {
  for (bool nesterov : {false, true}) {
    GW_EACH_INPUT(n, dist) {
      SCOPED_TRACE(input_name(n, dist));
      const std::vector<float> g = make_values(dist, n, 1);
      std::vector<float> u = make_values(Dist::kNormal, n, 2), v = make_values(dist, n, 3);
      std::vector<float> u2 = u, v2 = v;
      cpu::momentum_accumulate(g.data(), u.data(), v.data(), n, 0.9f, nesterov);
      thrust_algo::momentum_accumulate(omp, g.data(), u2.data(), v2.data(), n, 0.9f, nesterov);
      ASSERT_TRUE(same_bits(u, u2)) << "nesterov " << nesterov;
      ASSERT_TRUE(same_bits(v, v2)) << "nesterov " << nesterov;
    }
  }
}

TEST(ThrustOmp, MomentumToMatchesCpuBitForBitAlsoInPlace) {
  for (bool nesterov : {false, true}) {
    for (bool in_place : {false, true}) {
      GW_EACH_INPUT(n, dist) {
        SCOPED_TRACE(input_name(n, dist));
        std::vector<float> g = make_values(dist, n, 4);
        std::vector<float> u = make_values(Dist::kWideRange, n, 5), out(n, -1.0f);
        std::vector<float> g2 = g, u2 = u, out2 = out;
        cpu::momentum_to(g.data(), u.data(), in_place ? g.data() : out.data(), n, 0.75f, nesterov);
        thrust_algo::momentum_to(omp, g2.data(), u2.data(), in_place ? g2.data() : out2.data(), n,
                                 0.75f, nesterov);
        ASSERT_TRUE(same_bits(u, u2));
        ASSERT_TRUE(same_bits(in_place ? g : out, in_place ? g2 : out2));
      }
    }
  }
}

TEST(ThrustOmp, ClipByNormMatchesCpu) {
  GW_EACH_INPUT(n, dist) {
    SCOPED_TRACE(input_name(n, dist));
    if (dist == Dist::kSpecials) continue;  // an inf or NaN norm: covered below
    for (double limit : {0.0, 1.0, 1e9}) {
      std::vector<float> g = make_values(dist, n, 6), g2 = g;
      const double norm = cpu::clip_by_norm(g.data(), n, limit);
      const double norm2 = thrust_algo::clip_by_norm(omp, g2.data(), n, limit);
      // The sums' orders differ (8 lanes on the CPU, a tree here): a relative 1e-12 at most.
      ASSERT_NEAR(norm, norm2, 1e-12 * norm) << "limit " << limit;
      if (static_cast<float>(limit / norm) == static_cast<float>(limit / norm2)) {
        ASSERT_TRUE(same_bits(g, g2)) << "limit " << limit;
      }
    }
  }
  std::vector<float> inf = {1.0f, std::numeric_limits<float>::infinity(), 2.0f}, inf2 = inf;
  EXPECT_EQ(cpu::clip_by_norm(inf.data(), 3, 1.0),
            thrust_algo::clip_by_norm(omp, inf2.data(), 3, 1.0));
  EXPECT_TRUE(same_bits(inf, inf2));  // limit / inf = 0: every element becomes 0 (inf * 0: NaN)
}

TEST(ThrustOmp, LocalSgdAveragingMatchesCpuBitForBit) {
  GW_EACH_INPUT(n, dist) {
    SCOPED_TRACE(input_name(n, dist));
    const std::vector<float> w0 = make_values(dist, n, 7), a0 = make_values(Dist::kNormal, n, 8);
    std::vector<float> d(n), d2(n);
    cpu::subtract(w0.data(), a0.data(), d.data(), n);
    thrust_algo::subtract(omp, w0.data(), a0.data(), d2.data(), n);
    ASSERT_TRUE(same_bits(d, d2));

    std::vector<float> w = w0, a = a0, w2 = w0, a2 = a0;
    cpu::add_to_anchor(d.data(), w.data(), a.data(), n);
    thrust_algo::add_to_anchor(omp, d.data(), w2.data(), a2.data(), n);
    ASSERT_TRUE(same_bits(w, w2));
    ASSERT_TRUE(same_bits(a, a2));

    std::vector<float> s(n), s2(n);
    cpu::scale_to(w0.data(), 1.0f / 3.0f, s.data(), n);
    thrust_algo::scale_to(omp, w0.data(), 1.0f / 3.0f, s2.data(), n);
    ASSERT_TRUE(same_bits(s, s2));

    // Streaming DiLoCo's mixing, at the default alpha and one that rounds.
    for (float alpha : {0.5f, 0.3f}) {
      std::vector<float> m = a0, m2 = a0;
      cpu::mix(w0.data(), alpha, m.data(), n);
      thrust_algo::mix(omp, w0.data(), alpha, m2.data(), n);
      ASSERT_TRUE(same_bits(m, m2)) << "alpha " << alpha;
    }
  }
}

TEST(ThrustOmp, OuterStepMatchesCpuBitForBit) {
  GW_EACH_INPUT(n, dist) {
    SCOPED_TRACE(input_name(n, dist));
    const std::vector<float> x = make_values(dist, n, 15), a0 = make_values(Dist::kNormal, n, 16),
                             u0 = make_values(Dist::kNormal, n, 17);
    for (OuterRule rule : {OuterRule::kNesterov, OuterRule::kHeavyBall, OuterRule::kAverage}) {
      for (bool delta : {false, true}) {
        const OuterStep step{rule, 0.7f, 0.9f};
        std::vector<float> w(n), a = a0, u = u0, w2(n), a2 = a0, u2 = u0;
        cpu::outer_step(x.data(), 0.25f, delta, w.data(), a.data(), u.data(), n, step);
        thrust_algo::outer_step(omp, x.data(), 0.25f, delta, w2.data(), a2.data(), u2.data(), n,
                                step);
        ASSERT_TRUE(same_bits(w, w2));
        ASSERT_TRUE(same_bits(a, a2));
        ASSERT_TRUE(same_bits(u, u2));
      }
    }
  }
}

TEST(ThrustOmp, ScaleToFp16MatchesCpu) {
  for (std::size_t n : kSizes) {
    const std::vector<float> in = test_util::random_cast_inputs(n, 9);
    for (float alpha : {1.0f, 0.25f, 1.0f / 3.0f}) {
      std::vector<Half> out(n), out2(n);
      cpu::scale_to_fp16(in.data(), alpha, out.data(), n);
      thrust_algo::scale_to_fp16(omp, in.data(), alpha, out2.data(), n);
      std::size_t mismatches = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const bool ok = test_util::is_fp16_nan(out[i].bits) ? test_util::is_fp16_nan(out2[i].bits)
                                                            : out[i].bits == out2[i].bits;
        if (!ok && ++mismatches <= 5) {
          ADD_FAILURE() << "n " << n << " [" << i << "] " << in[i] << " * " << alpha << ": cpu 0x"
                        << std::hex << out[i].bits << " thrust 0x" << out2[i].bits << std::dec;
        }
      }
      ASSERT_EQ(mismatches, 0u);
    }
  }
}

// --- kernels/sparse.h ---------------------------------------------------------------------------

TEST(ThrustOmp, MagnitudeKeysMatchCpu) {
  GW_EACH_INPUT(n, dist) {
    SCOPED_TRACE(input_name(n, dist));
    const std::vector<float> v = make_values(dist, n, 10);
    std::vector<std::uint32_t> keys(n), keys2(n);
    cpu::magnitude_keys(v.data(), n, keys.data());
    thrust_algo::magnitude_keys(omp, v.data(), n, keys2.data());
    ASSERT_EQ(keys, keys2);
  }
}

TEST(ThrustOmp, SampleKeysMatchCpu) {
  GW_EACH_INPUT(n, dist) {
    SCOPED_TRACE(input_name(n, dist));
    if (n < kSampleBlockFloats) continue;
    const std::vector<float> v = make_values(dist, n, 11);
    for (std::size_t blocks : {std::size_t{1}, std::size_t{7}, std::size_t{1000}}) {
      for (std::uint64_t seed : {0ull, 1ull, 0xfedcba9876543210ull}) {
        std::vector<std::uint32_t> keys(blocks * 16), keys2(blocks * 16);
        cpu::sample_magnitude_keys(v.data(), n, blocks, seed, keys.data());
        thrust_algo::sample_magnitude_keys(omp, v.data(), n, blocks, seed, keys2.data());
        ASSERT_EQ(keys, keys2) << "blocks " << blocks << " seed " << seed;
      }
    }
  }
}

TEST(ThrustOmp, KthLargestKeyMatchesCpu) {
  for (std::size_t m : kSizes) {
    if (m == 0) continue;
    for (std::uint32_t range : {3u, 1000u, 0x7fffffffu}) {
      const std::vector<std::uint32_t> keys = random_keys(m, 12, range);
      for (std::size_t k : {std::size_t{1}, (m + 1) / 2, m}) {
        std::vector<std::uint32_t> scratch(m), scratch2(m);
        ASSERT_EQ(cpu::kth_largest_key(keys.data(), m, k, scratch.data()),
                  thrust_algo::kth_largest_key(omp, keys.data(), m, k, scratch2.data()))
            << "m " << m << " k " << k << " range " << range;
      }
    }
  }
}

// Thresholds: everything, the median key, a sampled key, +inf and above every NaN.
std::vector<std::uint32_t> thresholds_for(const std::vector<float>& v) {
  std::vector<std::uint32_t> t = {0u, 0x7f800000u, 0x7fffffffu};
  if (!v.empty()) {
    std::vector<std::uint32_t> keys(v.size()), scratch(v.size());
    cpu::magnitude_keys(v.data(), v.size(), keys.data());
    t.push_back(cpu::kth_largest_key(keys.data(), v.size(), (v.size() + 1) / 2, scratch.data()));
    t.push_back(keys[v.size() / 3]);
  }
  return t;
}

TEST(ThrustOmp, CountAndSelectAtLeastMatchCpu) {
  GW_EACH_INPUT(n, dist) {
    SCOPED_TRACE(input_name(n, dist));
    const std::vector<float> v = make_values(dist, n, 13);
    for (std::uint32_t t : thresholds_for(v)) {
      std::vector<std::uint32_t> idx(n), idx2(n);
      const std::size_t count = cpu::select_at_least(v.data(), n, t, idx.data());
      ASSERT_EQ(cpu::count_at_least(v.data(), n, t), count);
      ASSERT_EQ(thrust_algo::count_at_least(omp, v.data(), n, t), count) << "t " << t;
      ASSERT_EQ(thrust_algo::select_at_least(omp, v.data(), n, t, idx2.data()), count);
      idx.resize(count);
      idx2.resize(count);
      ASSERT_EQ(idx, idx2) << "t " << t;
    }
  }
}

TEST(ThrustOmp, KeepTopKMatchesCpu) {
  GW_EACH_INPUT(n, dist) {
    SCOPED_TRACE(input_name(n, dist));
    const std::vector<float> v = make_values(dist, n, 14);
    std::vector<std::uint32_t> thresholds = thresholds_for(v);
    // At a million, only the two thresholds in the middle of v (the others cost time).
    if (n > 100'003) thresholds.erase(thresholds.begin(), thresholds.begin() + 3);
    for (std::uint32_t t : thresholds) {
      std::vector<std::uint32_t> candidates(n);
      const std::size_t count = cpu::select_at_least(v.data(), n, t, candidates.data());
      if (count == 0) continue;
      for (std::size_t k : {std::size_t{1}, (count + 2) / 3, count - count / 20, count}) {
        std::vector<std::uint32_t> idx = candidates, idx2 = candidates, scratch(n), scratch2(n);
        const std::uint32_t kth = cpu::keep_top_k(v.data(), idx.data(), count, k, scratch.data());
        ASSERT_EQ(thrust_algo::keep_top_k(omp, v.data(), idx2.data(), count, k, scratch2.data()),
                  kth)
            << "count " << count << " k " << k;
        idx.resize(k);
        idx2.resize(k);
        ASSERT_EQ(idx, idx2) << "count " << count << " k " << k;
      }
    }
  }
}

TEST(ThrustOmp, ExactTopkBySortMatchesCpu) {
  GW_EACH_INPUT(n, dist) {
    SCOPED_TRACE(input_name(n, dist));
    if (n == 0) continue;  // k >= 1
    const std::vector<float> v = make_values(dist, n, 16);
    for (std::size_t k : {std::size_t{1}, (n + 999) / 1000, (n + 2) / 3, n}) {
      std::vector<std::uint32_t> idx(n), idx2(n), scratch(n), scratch2(n);
      const std::uint32_t kth = cpu::exact_topk_by_sort(v.data(), n, k, idx.data(), scratch.data());
      ASSERT_EQ(thrust_algo::exact_topk_by_sort(omp, v.data(), n, k, idx2.data(), scratch2.data()),
                kth)
          << "k " << k;
      idx.resize(k);
      idx2.resize(k);
      ASSERT_EQ(idx, idx2) << "k " << k;
    }
  }
}

TEST(ThrustOmp, PackZeroAndScatterAddMatchCpuBitForBit) {
  GW_EACH_INPUT(n, dist) {
    SCOPED_TRACE(input_name(n, dist));
    const std::vector<float> v = make_values(dist, n, 15);
    std::vector<std::uint32_t> idx(n);
    const std::size_t count =
        cpu::select_at_least(v.data(), n, thresholds_for(v).back(), idx.data());
    std::vector<std::uint32_t> words(2 * count), words2(2 * count);
    cpu::pack_pairs(idx.data(), count, v.data(), words.data());
    thrust_algo::pack_pairs(omp, idx.data(), count, v.data(), words2.data());
    ASSERT_EQ(words, words2);

    std::vector<float> x = make_values(Dist::kNormal, n, 16), x2 = x;
    cpu::scatter_add_pairs(words.data(), count, x.data());
    thrust_algo::scatter_add_pairs(omp, words.data(), count, x2.data());
    ASSERT_TRUE(same_bits(x, x2));

    cpu::zero_at(x.data(), idx.data(), count);
    thrust_algo::zero_at(omp, x2.data(), idx.data(), count);
    ASSERT_TRUE(same_bits(x, x2));
  }
}

// The merge of several ranks' pairs into one candidate set: the indices of two overlapping
// selections, concatenated, sorted and made distinct, as on the CPU.
TEST(ThrustOmp, PairIndicesAndSortUniqueMatchCpu) {
  GW_EACH_INPUT(n, dist) {
    SCOPED_TRACE(input_name(n, dist));
    const std::vector<float> v = make_values(dist, n, 18);
    std::vector<std::uint32_t> idx(n);
    const std::vector<std::uint32_t> thresholds = thresholds_for(v);
    const std::size_t a = cpu::select_at_least(v.data(), n, thresholds.back(), idx.data());
    std::vector<std::uint32_t> idx_b(n);
    const std::size_t b = cpu::select_at_least(v.data(), n, thresholds.front(), idx_b.data());
    std::vector<std::uint32_t> words(2 * (a + b));
    cpu::pack_pairs(idx.data(), a, v.data(), words.data());
    cpu::pack_pairs(idx_b.data(), b, v.data(), words.data() + 2 * a);
    std::vector<std::uint32_t> cand(a + b), cand2(a + b);
    cpu::pair_indices(words.data(), a, cand.data());
    cpu::pair_indices(words.data() + 2 * a, b, cand.data() + a);
    thrust_algo::pair_indices(omp, words.data(), a, cand2.data());
    thrust_algo::pair_indices(omp, words.data() + 2 * a, b, cand2.data() + a);
    ASSERT_EQ(cand, cand2);
    const std::size_t u = cpu::sort_unique(cand.data(), a + b);
    const std::size_t u2 = thrust_algo::sort_unique(omp, cand2.data(), a + b);
    ASSERT_EQ(u, u2);
    ASSERT_EQ(u, std::max(a, b));  // one selection holds the other
    cand.resize(u);
    cand2.resize(u);
    ASSERT_EQ(cand, cand2);
    ASSERT_TRUE(std::is_sorted(cand.begin(), cand.end()));
    ASSERT_EQ(std::adjacent_find(cand.begin(), cand.end()), cand.end());
  }
}

TEST(ThrustOmp, SplitByRegionMatchesCpu) {
  GW_EACH_INPUT(n, dist) {
    SCOPED_TRACE(input_name(n, dist));
    const std::vector<float> v = make_values(dist, n, 17);
    std::vector<std::uint32_t> idx(n);
    const std::size_t count =
        cpu::select_at_least(v.data(), n, thresholds_for(v).back(), idx.data());
    for (std::size_t regions : {1, 2, 3, 8}) {
      const auto region =
          static_cast<std::uint32_t>(std::max<std::size_t>(1, (n + regions - 1) / regions));
      std::vector<std::uint32_t> rel(count), rel2(count), starts(regions + 1), starts2(regions + 1);
      cpu::split_by_region(idx.data(), count, region, regions, rel.data(), starts.data());
      thrust_algo::split_by_region(omp, idx.data(), count, region, regions, rel2.data(),
                                   starts2.data());
      ASSERT_EQ(rel, rel2);
      ASSERT_EQ(starts, starts2);
    }
  }
}

bool same_check(const PairsCheck& a, const PairsCheck& b) {
  return a.problem == b.problem && a.position == b.position && a.index == b.index &&
         a.previous_index == b.previous_index;
}

TEST(ThrustOmp, CheckSparsePairsMatchesCpu) {
  for (std::size_t count :
       {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{1000}, std::size_t{100'003}}) {
    const std::size_t numel = 3 * count + 5;
    std::vector<std::uint32_t> good(2 * count);
    for (std::size_t j = 0; j < count; ++j) {
      good[2 * j] = static_cast<std::uint32_t>(3 * j + 1);
      good[2 * j + 1] = float_bits(static_cast<float>(j));
    }
    std::vector<std::vector<std::uint32_t>> segments = {good};
    for (std::size_t at : {std::size_t{0}, count / 2, count - (count > 0)}) {
      if (count == 0) break;
      auto out_of_range = good, repeat = good, decreasing = good, both = good;
      out_of_range[2 * at] = static_cast<std::uint32_t>(numel);
      if (at > 0) {
        repeat[2 * at] = repeat[2 * at - 2];
        decreasing[2 * at] = repeat[2 * at - 2] - 1;
      }
      both[2 * at] = 0xffffffffu;
      if (at + 1 < count) both[2 * at + 2] = 0;  // the first problem is the one reported
      segments.insert(segments.end(), {out_of_range, repeat, decreasing, both});
    }
    for (const auto& s : segments) {
      const PairsCheck expected = cpu::check_sparse_pairs(s.data(), count, numel);
      const PairsCheck actual = thrust_algo::check_sparse_pairs(omp, s.data(), count, numel);
      ASSERT_TRUE(same_check(expected, actual))
          << "count " << count << ": cpu problem " << static_cast<int>(expected.problem) << " at "
          << expected.position << ", thrust problem " << static_cast<int>(actual.problem) << " at "
          << actual.position;
    }
  }
}

// --- The composed selector against the host TopkSelector ---------------------------------------

struct DeviceSelection {
  std::vector<std::uint32_t> out;
  std::size_t count;
  TopkStats stats;
};

DeviceSelection select_on_omp(const std::vector<float>& v, std::size_t k, double ratio,
                              std::uint64_t seed) {
  const std::size_t n = v.size();
  std::vector<std::uint32_t> keys(n), scratch(n), candidates(n);
  DeviceSelection s;
  s.out.assign(std::min(k, n), 0xdeadbeefu);
  s.count = thrust_algo::select_topk(
      omp, v.data(), n, k, ratio, seed, s.out.data(),
      thrust_algo::TopkWorkspace{keys.data(), scratch.data(), candidates.data()}, s.stats);
  s.out.resize(s.count);
  return s;
}

// Same count, indices, threshold, sample, rescans and fallback as the host; returns the stats.
TopkStats expect_same_selection(const std::vector<float>& v, std::size_t k, double ratio,
                                std::uint64_t seed) {
  SCOPED_TRACE(testing::Message() << "n " << v.size() << " k " << k << " ratio " << ratio
                                  << " seed " << seed);
  TopkSelector host;
  std::vector<std::uint32_t> out(std::min(k, v.size()));
  const std::size_t count = host.select(v.data(), v.size(), k, ratio, seed, out.data());
  out.resize(count);
  const DeviceSelection device = select_on_omp(v, k, ratio, seed);
  const TopkStats& h = host.last_stats();
  EXPECT_EQ(device.count, count);
  EXPECT_EQ(device.out, out);
  EXPECT_EQ(float_bits(device.stats.threshold), float_bits(h.threshold));
  EXPECT_EQ(device.stats.sample_size, h.sample_size);
  EXPECT_EQ(device.stats.rescans, h.rescans);
  EXPECT_EQ(device.stats.exact_fallback, h.exact_fallback);
  // The final threshold's whole pass count: the host's candidates when its buffer never filled
  // (then it never cut; See Note [Device top-k]). It tells apart thresholds that select the same
  // indices, so a rescan at another threshold shows.
  const std::size_t capacity = std::min(v.size(), std::max<std::size_t>(2 * k, 1024));
  if (k > 0 && k < v.size() && h.candidates < capacity) {
    EXPECT_EQ(device.stats.candidates, h.candidates);
  }
  return h;
}

TEST(ThrustOmpTopk, SameIndicesAsHostSelector) {
  int sampled = 0;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{100}, std::size_t{1000},
                        std::size_t{5000}, std::size_t{100'003}}) {
    for (Dist dist : kAllDists) {
      const std::vector<float> v = make_values(dist, n, static_cast<std::uint32_t>(17 + n));
      for (std::size_t k : test_inputs::ks_for(n)) {
        for (double ratio : {0.001, 0.01, 0.3, 1.0}) {
          if (ratio == 1.0 && n > 5000) continue;  // the exact path, as 0.3 takes for small k
          const TopkStats h = expect_same_selection(v, k, ratio, 1000 * n + k);
          sampled += h.sample_size > 0 && h.sample_size < n;
          if (HasFailure()) return;
        }
      }
    }
  }
  EXPECT_GT(sampled, 100) << "the sampled path was rarely taken";
}

TEST(ThrustOmpTopk, SameIndicesAsHostSelectorOnAMillion) {
  for (Dist dist : {Dist::kNormal, Dist::kTies, Dist::kSpecials}) {
    const std::vector<float> v = make_values(dist, 1'000'003, 18);
    for (std::size_t k : {std::size_t{1000}, std::size_t{10'000}, std::size_t{100'000}}) {
      const TopkStats h = expect_same_selection(v, k, 0.001, 42 + k);
      EXPECT_LT(h.sample_size, v.size() / 2);
      if (HasFailure()) return;
    }
  }
}

TEST(ThrustOmpTopk, SameIndicesAsHostSelectorForManySeeds) {
  const std::vector<float> v = make_values(Dist::kNormal, 20'000, 19);
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    expect_same_selection(v, 200 + 7 * seed, 0.01, seed);
    if (HasFailure()) return;
  }
}

// Large values in a few whole blocks of 16 (63 of 6250): a sample of 400 blocks holds about 4 of
// them, and for some seeds many more, so its first threshold passes too few and the rescan's
// rank still lies within the sample (the misleading samples below run past its end).
TEST(ThrustOmpTopk, SameRescansWithinTheSampleAsHostSelector) {
  int rescans = 0;
  for (std::uint32_t seed = 0; seed < 100; ++seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> small(0.0f, 1e-3f);
    std::uniform_real_distribution<double> exponent(0.0, 4.0);
    std::uniform_int_distribution<std::size_t> block(0, 100'000 / 16 - 1);
    std::vector<float> v(100'000);
    for (float& x : v) x = small(rng);
    for (int b = 0; b < 63; ++b) {
      const std::size_t first = 16 * block(rng);
      for (std::size_t j = 0; j < 16; ++j) {
        v[first + j] = static_cast<float>(std::exp2(10.0 + exponent(rng)));
      }
    }
    const TopkStats h = expect_same_selection(v, 1000, 0.01, seed);
    EXPECT_EQ(h.sample_size, 6400u);
    rescans += h.rescans > 0;
    if (HasFailure()) return;
  }
  EXPECT_GT(rescans, 0) << "no rescan taken";
}

// The misleading samples of topk_select_test: rescans and the exact fallback must be taken, and
// the device must take them at the same steps.
TEST(ThrustOmpTopk, SameRescansAndFallbackAsHostSelector) {
  int rescans = 0, fallbacks = 0;
  for (double spread : {0.01, 100.0}) {
    for (std::uint32_t seed = 0; seed < 100; ++seed) {
      const TopkStats h =
          expect_same_selection(test_inputs::misleading_blocks(seed, spread), 8192, 0.01, seed);
      rescans += h.rescans > 0 && !h.exact_fallback;
      fallbacks += h.exact_fallback;
      if (HasFailure()) return;
    }
  }
  EXPECT_GT(rescans, 0) << "no rescan taken";
  EXPECT_GT(fallbacks, 0) << "no exact fallback taken";
}

}  // namespace
}  // namespace gw::kernels
