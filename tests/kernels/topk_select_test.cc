// TopkSelector against an exact top-k (std::nth_element over a copy), across distributions that
// make a sampled threshold easy, hard or misleading, sizes 0 .. 1e6 and sparsities 0.999 .. 0.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/topk.h"
#include "tests/kernels/sparse_test_inputs.h"

namespace gw::kernels {
namespace {

// Magnitude order written independently of the implementation's bit keys: NaN above everything
// (+inf included), then |x|.
bool magnitude_less(float a, float b) {
  if (std::isnan(b)) return !std::isnan(a);
  if (std::isnan(a)) return false;
  return std::fabs(a) < std::fabs(b);
}

// The m-th largest magnitude of v (1 <= m <= n), as a value to compare with magnitude_less.
float exact_mth_largest(std::vector<float> v, std::size_t m) {
  std::nth_element(v.begin(), v.begin() + (m - 1), v.end(),
                   [](float a, float b) { return magnitude_less(b, a); });
  return v[m - 1];
}

// Checks everything select() promises for one call; returns the failure text or success.
::testing::AssertionResult valid_selection(const std::vector<float>& v, std::size_t k,
                                           const std::vector<std::uint32_t>& out, std::size_t count,
                                           const TopkStats& stats) {
  const std::size_t n = v.size();
  if (k >= n) {
    if (count != n) return ::testing::AssertionFailure() << "k >= n: count " << count;
    for (std::size_t i = 0; i < n; ++i) {
      if (out[i] != i) return ::testing::AssertionFailure() << "k >= n: out[" << i << "]";
    }
    return ::testing::AssertionSuccess();
  }
  if (count < topk_min_count(k) || count > k) {
    return ::testing::AssertionFailure()
           << "count " << count << " outside [" << topk_min_count(k) << ", " << k << "]";
  }
  std::vector<char> selected(n, 0);
  for (std::size_t i = 0; i < count; ++i) {
    if (out[i] >= n) return ::testing::AssertionFailure() << "index " << out[i] << " >= n";
    if (i > 0 && out[i] <= out[i - 1]) {
      return ::testing::AssertionFailure() << "indices not strictly ascending at " << i;
    }
    selected[out[i]] = 1;
  }
  if (count == 0) return ::testing::AssertionSuccess();
  // Among the exact top-count: no unselected element is larger than the smallest selected one.
  float smallest_selected = v[out[0]];
  for (std::size_t i = 0; i < count; ++i) {
    if (magnitude_less(v[out[i]], smallest_selected)) smallest_selected = v[out[i]];
  }
  for (std::size_t j = 0; j < n; ++j) {
    if (!selected[j] && magnitude_less(smallest_selected, v[j])) {
      return ::testing::AssertionFailure()
             << "unselected v[" << j << "] = " << v[j] << " beats selected " << smallest_selected;
    }
  }
  // Against the exact top-k set (ties by magnitude, not by index): at least ceil(k (1 - tol)) of
  // the selected are at or above the exact k-th magnitude.
  const float kth = exact_mth_largest(v, k);
  std::size_t in_top_k = 0;
  for (std::size_t i = 0; i < count; ++i) in_top_k += !magnitude_less(v[out[i]], kth);
  if (in_top_k < topk_min_count(k)) {
    return ::testing::AssertionFailure()
           << "only " << in_top_k << " of " << count << " selected are in the exact top " << k;
  }
  // The reported threshold separates selected from unselected (NaN thresholds aside).
  if (!std::isnan(stats.threshold)) {
    if (magnitude_less(smallest_selected, stats.threshold)) {
      return ::testing::AssertionFailure()
             << "selected " << smallest_selected << " below reported threshold " << stats.threshold;
    }
    for (std::size_t j = 0; j < n; ++j) {
      if (!selected[j] && magnitude_less(stats.threshold, v[j])) {
        return ::testing::AssertionFailure()
               << "unselected " << v[j] << " above reported threshold " << stats.threshold;
      }
    }
  }
  return ::testing::AssertionSuccess();
}

enum class Dist {
  kNormal,
  kUniform,
  kCauchy,
  kSignedLognormal,
  kSpikes,
  kAllEqual,
  kAscending,
  kDescending,
  kLayerLike
};

const char* dist_name(Dist d) {
  switch (d) {
    case Dist::kNormal:
      return "Normal";
    case Dist::kUniform:
      return "Uniform";
    case Dist::kCauchy:
      return "Cauchy";
    case Dist::kSignedLognormal:
      return "SignedLognormal";
    case Dist::kSpikes:
      return "Spikes";
    case Dist::kAllEqual:
      return "AllEqual";
    case Dist::kAscending:
      return "Ascending";
    case Dist::kDescending:
      return "Descending";
    case Dist::kLayerLike:
      return "LayerLike";
  }
  return "?";
}

std::vector<float> make_values(Dist d, std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::cauchy_distribution<float> cauchy(0.0f, 1.0f);
  std::lognormal_distribution<float> lognormal(0.0f, 3.0f);
  std::bernoulli_distribution coin(0.5);
  std::vector<float> v(n);
  switch (d) {
    case Dist::kNormal:
      for (float& x : v) x = normal(rng);
      break;
    case Dist::kUniform:
      for (float& x : v) x = uniform(rng);
      break;
    case Dist::kCauchy:
      for (float& x : v) x = cauchy(rng);
      break;
    case Dist::kSignedLognormal:
      for (float& x : v) x = coin(rng) ? lognormal(rng) : -lognormal(rng);
      break;
    case Dist::kSpikes: {
      // Mostly exact zeros: about 1 in 500 elements is a spike of random size.
      std::uniform_int_distribution<int> one_in(0, 499);
      for (float& x : v) x = one_in(rng) == 0 ? 100.0f * normal(rng) : 0.0f;
      break;
    }
    case Dist::kAllEqual:
      for (float& x : v) x = coin(rng) ? 0.25f : -0.25f;
      break;
    case Dist::kAscending:
    case Dist::kDescending:
      for (float& x : v) x = uniform(rng);
      std::sort(v.begin(), v.end(), magnitude_less);
      if (d == Dist::kDescending) std::reverse(v.begin(), v.end());
      break;
    case Dist::kLayerLike: {
      // Layers of very different scales; one stretch (the 10% starting at 60%) 1000x larger.
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t layer = i * 8 / std::max<std::size_t>(n, 1);
        const float scale = std::ldexp(1.0f, -static_cast<int>(layer));
        const bool big = i >= n * 6 / 10 && i < n * 7 / 10;
        v[i] = normal(rng) * scale * (big ? 1000.0f : 1.0f);
      }
      break;
    }
  }
  return v;
}

struct Case {
  Dist dist;
  std::size_t n;
};

class TopkSelectTest : public ::testing::TestWithParam<Case> {};

// k for every sparsity tested, plus the extremes, deduplicated.
std::vector<std::size_t> ks_for(std::size_t n) {
  std::vector<std::size_t> ks = {0, 1, n, n + 3};
  for (double sparsity : {0.999, 0.99, 0.9, 0.5}) {
    ks.push_back(std::max<std::size_t>(
        1, static_cast<std::size_t>(std::llround((1.0 - sparsity) * double(n)))));
  }
  if (n > 2) ks.push_back(n - 1);
  std::sort(ks.begin(), ks.end());
  ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
  return ks;
}

TEST_P(TopkSelectTest, MatchesExactTopK) {
  const auto [dist, n] = GetParam();
  const std::vector<float> v = make_values(dist, n, 1234);
  TopkSelector selector;  // reused across calls: the workspace must not leak state
  for (double ratio : {0.01, 0.001, 1.0}) {
    for (std::size_t k : ks_for(n)) {
      std::vector<std::uint32_t> out(std::max<std::size_t>(std::min(k, n), 1));
      const std::size_t count = selector.select(v.data(), n, k, ratio, 99, out.data());
      EXPECT_TRUE(valid_selection(v, k, out, count, selector.last_stats()))
          << dist_name(dist) << " n=" << n << " k=" << k << " ratio=" << ratio;
    }
  }
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (Dist d :
       {Dist::kNormal, Dist::kUniform, Dist::kCauchy, Dist::kSignedLognormal, Dist::kSpikes,
        Dist::kAllEqual, Dist::kAscending, Dist::kDescending, Dist::kLayerLike}) {
    for (std::size_t n : {0, 1, 7, 1000, 16384, 1'000'000}) cases.push_back({d, n});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Distributions, TopkSelectTest, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(dist_name(info.param.dist)) + "_n" +
                                  std::to_string(info.param.n);
                         });

TEST(TopkSelect, MinCount) {
  EXPECT_EQ(topk_min_count(0), 0u);
  EXPECT_EQ(topk_min_count(1), 1u);
  EXPECT_EQ(topk_min_count(19), 19u);  // 18.05 rounds up to 19
  EXPECT_EQ(topk_min_count(20), 19u);
  EXPECT_EQ(topk_min_count(21), 20u);  // 19.95
  EXPECT_EQ(topk_min_count(100), 95u);
  EXPECT_EQ(topk_min_count(25000), 23750u);
  for (std::size_t k = 0; k < 10000; ++k) {
    const std::size_t m = topk_min_count(k);
    // Exactly ceil(k * 0.95), checked in integers: 20 m >= 19 k > 20 (m - 1).
    ASSERT_GE(20 * m, 19 * k) << k;
    ASSERT_LT(20 * (m == 0 ? 0 : m - 1), 19 * k + (k == 0 ? 1 : 0)) << k;
  }
}

TEST(TopkSelect, UsesTheSampleOnLargeInputs) {
  const std::vector<float> v = make_values(Dist::kNormal, 1'000'000, 5);
  std::vector<std::uint32_t> out(1000);
  TopkSelector selector;
  const std::size_t count = selector.select(v.data(), v.size(), 1000, 0.01, 1, out.data());
  const TopkStats& stats = selector.last_stats();
  // max(1e6 * 0.01, 64 * 1e6 / 1000) = 64000 samples, in whole blocks of 16.
  EXPECT_EQ(stats.sample_size, 64000u);
  EXPECT_EQ(stats.rescans, 0);
  EXPECT_FALSE(stats.exact_fallback);
  // Aimed at 1.3k candidates: well within [k, 2k] for a normal distribution.
  EXPECT_GE(stats.candidates, 1000u);
  EXPECT_LE(stats.candidates, 2000u);
  EXPECT_TRUE(valid_selection(v, 1000, out, count, stats));
}

TEST(TopkSelect, DeterministicForTheSameSeed) {
  const std::vector<float> v = make_values(Dist::kCauchy, 1'000'000, 6);
  const std::size_t k = 10000;
  std::vector<std::uint32_t> a(k), b(k), c(k);
  TopkSelector first, second;
  const std::size_t na = first.select(v.data(), v.size(), k, 0.001, 42, a.data());
  // A selector that has already worked on other inputs and sizes gives the same answer.
  std::vector<std::uint32_t> scratch(k);
  const std::vector<float> other = make_values(Dist::kLayerLike, 16384, 7);
  second.select(other.data(), other.size(), 300, 0.01, 3, scratch.data());
  const std::size_t nb = second.select(v.data(), v.size(), k, 0.001, 42, b.data());
  ASSERT_EQ(na, nb);
  a.resize(na);
  b.resize(nb);
  EXPECT_EQ(a, b);
  EXPECT_EQ(first.last_stats().threshold, second.last_stats().threshold);
  EXPECT_EQ(first.last_stats().candidates, second.last_stats().candidates);
  // Another seed draws another sample (the result may differ, but must be valid too).
  const std::size_t nc = first.select(v.data(), v.size(), k, 0.001, 43, c.data());
  EXPECT_TRUE(valid_selection(v, k, c, nc, first.last_stats()));
}

TEST(TopkSelect, NanAndInfAreAlwaysSelected) {
  std::vector<float> v = make_values(Dist::kNormal, 1'000'000, 8);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  v[17] = nan;
  v[500'000] = -nan;  // sign bit set
  v[999'999] = inf;
  v[3] = -inf;
  for (double ratio : {0.01, 1.0}) {
    for (std::size_t k : {std::size_t{4}, std::size_t{1000}}) {
      std::vector<std::uint32_t> out(k);
      TopkSelector selector;
      const std::size_t count = selector.select(v.data(), v.size(), k, ratio, 0, out.data());
      ASSERT_TRUE(valid_selection(v, k, out, count, selector.last_stats()));
      out.resize(count);
      for (std::uint32_t i : {17u, 500'000u, 999'999u, 3u}) {
        EXPECT_NE(std::find(out.begin(), out.end(), i), out.end()) << i << " k=" << k;
      }
    }
  }
  // NaN ranks above +inf: with k = 2, the two NaNs win.
  std::vector<std::uint32_t> two(2);
  TopkSelector selector;
  ASSERT_EQ(selector.select(v.data(), v.size(), 2, 1.0, 0, two.data()), 2u);
  EXPECT_EQ(two, (std::vector<std::uint32_t>{17u, 500'000u}));
}

TEST(TopkSelect, RejectsInvalidArgumentsBeforeReading) {
  const std::vector<float> v(100, 1.0f);
  std::vector<std::uint32_t> out(10);
  TopkSelector selector;
  for (double bad : {0.0, -0.5, 1.0000001, 2.0, std::numeric_limits<double>::quiet_NaN(),
                     std::numeric_limits<double>::infinity()}) {
    EXPECT_THROW(selector.select(v.data(), v.size(), 10, bad, 0, out.data()), std::invalid_argument)
        << bad;
    // Checked even when there is nothing to select.
    EXPECT_THROW(selector.select(v.data(), 0, 0, bad, 0, out.data()), std::invalid_argument);
  }
  EXPECT_NO_THROW(selector.select(v.data(), v.size(), 10, 1.0, 0, out.data()));
  // n past 2^32 - 1 cannot be indexed by uint32: rejected, naming the limit, before v is read
  // (v here is far shorter; reading it would be out of bounds).
  try {
    selector.select(v.data(), std::size_t{1} << 32, 10, 0.01, 0, out.data());
    ADD_FAILURE() << "no exception for n = 2^32";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("4294967295"), std::string::npos) << e.what();
  }
}

TEST(TopkSelect, WritesAtMostMinKNIndices) {
  // k > n: all n indices, and out needs (and gets) only n entries; k < n: at most k written.
  const std::vector<float> v = make_values(Dist::kUniform, 7, 9);
  const std::uint32_t sentinel = 0xdeadbeefu;
  std::vector<std::uint32_t> out(20, sentinel);
  TopkSelector selector;
  ASSERT_EQ(selector.select(v.data(), 7, 1000, 0.5, 0, out.data()), 7u);
  for (std::uint32_t i = 0; i < 7; ++i) EXPECT_EQ(out[i], i);
  for (std::size_t i = 7; i < out.size(); ++i) EXPECT_EQ(out[i], sentinel);

  const std::vector<float> w = make_values(Dist::kNormal, 100'000, 10);
  std::vector<std::uint32_t> big(200, sentinel);
  const std::size_t count = selector.select(w.data(), w.size(), 100, 0.01, 0, big.data());
  for (std::size_t i = count; i < big.size(); ++i) EXPECT_EQ(big[i], sentinel) << i;
  EXPECT_EQ(selector.select(w.data(), w.size(), 0, 0.01, 0, big.data()), 0u);
  EXPECT_EQ(selector.select(nullptr, 0, 5, 0.01, 0, nullptr), 0u);
}

TEST(TopkSelect, HeavyTiesOverflowTheCandidateBufferOnce) {
  // All magnitudes equal: the sampled threshold passes everything, the buffer fills, and after
  // one cut to the top k nothing else can pass (only keys strictly above the cut do).
  const std::vector<float> v(1'000'000, -3.0f);
  const std::size_t k = 1000;
  std::vector<std::uint32_t> out(k);
  TopkSelector selector;
  ASSERT_EQ(selector.select(v.data(), v.size(), k, 0.01, 0, out.data()), k);
  EXPECT_LT(selector.last_stats().sample_size, v.size());
  // The buffer (2k entries) filled once, to within a 64-float block, and was cut once.
  EXPECT_GE(selector.last_stats().candidates, 2 * k);
  EXPECT_LT(selector.last_stats().candidates, 2 * k + 64);
  // Ties go to the lowest indices.
  for (std::uint32_t i = 0; i < k; ++i) ASSERT_EQ(out[i], i);
}

// k large values in k / 16 random blocks of 16 (the sample's unit) among n small ones: a sample
// that catches none or one of those blocks sets the threshold among the small values, and more
// than twice k elements pass it.
std::vector<float> clustered_large(std::uint32_t seed, std::size_t n, std::size_t k) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> small(-1.0f, 1.0f), large(10.0f, 20.0f);
  std::vector<float> v(n);
  for (float& x : v) x = small(rng);
  std::vector<std::size_t> blocks(n / 16);
  for (std::size_t b = 0; b < blocks.size(); ++b) blocks[b] = b;
  std::shuffle(blocks.begin(), blocks.end(), rng);
  for (std::size_t b = 0; b < k / 16; ++b) {
    for (std::size_t j = 0; j < 16; ++j) v[blocks[b] * 16 + j] = large(rng);
  }
  return v;
}

TEST(TopkSelect, FullCandidateBufferIsCutToTheTopK) {
  // Distinct values (unlike the ties above): each cut must keep the k largest, not the first k.
  const std::size_t n = 65536, k = 1024;
  int overflows = 0;
  for (std::uint32_t seed = 0; seed < 100; ++seed) {
    const std::vector<float> v = clustered_large(seed, n, k);
    std::vector<std::uint32_t> out(k);
    TopkSelector selector;
    const std::size_t count = selector.select(v.data(), n, k, 0.001, seed, out.data());
    ASSERT_TRUE(valid_selection(v, k, out, count, selector.last_stats())) << "seed " << seed;
    overflows += selector.last_stats().candidates > 2 * k;  // the buffer holds 2k
  }
  EXPECT_GT(overflows, 0) << "the candidate buffer never filled";
}

// Blocks of 16 holding the large values: tests/kernels/sparse_test_inputs.h, misleading_blocks.
using test_inputs::misleading_blocks;

// Over many seeds, a misleading sample must occur for the given data; each result stays valid.
void expect_path_taken(double spread, bool want_fallback) {
  const std::size_t k = 8192;  // = the number of large values; a sample of 11 blocks
  int hits = 0;
  for (std::uint32_t seed = 0; seed < 200; ++seed) {
    const std::vector<float> v = misleading_blocks(seed, spread);
    std::vector<std::uint32_t> out(k);
    TopkSelector selector;
    const std::size_t count = selector.select(v.data(), v.size(), k, 0.01, seed, out.data());
    const TopkStats& stats = selector.last_stats();
    ASSERT_TRUE(valid_selection(v, k, out, count, stats)) << "seed " << seed;
    ASSERT_LT(stats.sample_size, v.size() / 2);
    if (want_fallback) {
      hits += stats.exact_fallback;
      if (stats.exact_fallback) EXPECT_EQ(stats.rescans, 2);
    } else {
      hits += stats.rescans > 0 && !stats.exact_fallback;
    }
  }
  EXPECT_GT(hits, 0) << (want_fallback ? "exact fallback" : "rescan") << " never taken";
}

TEST(TopkSelect, RescanWhenTheSampleMisleads) { expect_path_taken(0.01, false); }

TEST(TopkSelect, ExactFallbackWhenRescansFallShort) { expect_path_taken(100.0, true); }

}  // namespace
}  // namespace gw::kernels
