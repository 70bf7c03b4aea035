// kernels/sparse.h on the host stream against scalar references and exact expectations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "kernels/sparse.h"
#include "kernels/topk.h"
#include "tests/kernels/kernels_test_util.h"
#include "tests/kernels/sparse_test_inputs.h"

namespace gw::kernels {
namespace {

using test_inputs::Dist;
using test_inputs::make_values;
using test_util::bits_float;
using test_util::float_bits;

const Stream kHost = Stream::host();

std::uint32_t reference_key(float x) { return float_bits(x) & 0x7fffffffu; }

TEST(SparseCpu, MagnitudeKeysDropTheSignAndOrderNanAboveInf) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> v = {-0.0f, 1.0f, -1.0f,
                                inf,   -inf, std::numeric_limits<float>::quiet_NaN()};
  std::vector<std::uint32_t> keys(v.size());
  magnitude_keys(v.data(), v.size(), keys.data(), kHost);
  EXPECT_EQ(keys[0], 0u);
  EXPECT_EQ(keys[1], 0x3f800000u);
  EXPECT_EQ(keys[2], 0x3f800000u);
  EXPECT_EQ(keys[3], 0x7f800000u);
  EXPECT_EQ(keys[4], 0x7f800000u);
  EXPECT_GT(keys[5], keys[3]);
}

// SplitMix64 as a sequential generator (the reference TopkSelector's sample is drawn with).
std::vector<std::uint32_t> reference_sample(const std::vector<float>& v, std::size_t blocks,
                                            std::uint64_t seed) {
  std::uint64_t state = seed;
  std::vector<std::uint32_t> keys;
  for (std::size_t b = 0; b < blocks; ++b) {
    state += 0x9e3779b97f4a7c15ull;
    std::uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    const std::uint64_t block = ((z >> 32) * (v.size() / 16)) >> 32;
    for (std::size_t j = 0; j < 16; ++j) keys.push_back(reference_key(v[block * 16 + j]));
  }
  return keys;
}

TEST(SparseCpu, SampleKeysAreWholeBlocksDrawnBySplitMix64) {
  for (std::size_t n : {std::size_t{16}, std::size_t{31}, std::size_t{4099}}) {
    const std::vector<float> v = make_values(Dist::kNormal, n, 1);
    for (std::size_t blocks : {std::size_t{0}, std::size_t{1}, std::size_t{300}}) {
      std::vector<std::uint32_t> keys(blocks * 16);
      sample_magnitude_keys(v.data(), n, blocks, 77, keys.data(), kHost);
      EXPECT_EQ(keys, reference_sample(v, blocks, 77)) << "n " << n << " blocks " << blocks;
    }
  }
  std::vector<float> v(15);
  std::vector<std::uint32_t> keys(16);
  EXPECT_THROW(sample_magnitude_keys(v.data(), 15, 1, 0, keys.data(), kHost),
               std::invalid_argument);
  sample_magnitude_keys(v.data(), 15, 0, 0, keys.data(), kHost);  // no block asked for: fine
}

TEST(SparseCpu, KthLargestKeyMatchesSort) {
  for (std::size_t m : {std::size_t{1}, std::size_t{7}, std::size_t{1000}}) {
    const std::vector<float> v = make_values(Dist::kTies, m, 2);
    std::vector<std::uint32_t> keys(m), scratch(m);
    magnitude_keys(v.data(), m, keys.data(), kHost);
    std::vector<std::uint32_t> sorted = keys;
    std::sort(sorted.rbegin(), sorted.rend());
    for (std::size_t k = 1; k <= m; k += std::max<std::size_t>(1, m / 10)) {
      EXPECT_EQ(kth_largest_key(keys.data(), m, k, scratch.data(), kHost), sorted[k - 1]);
    }
    EXPECT_THROW(kth_largest_key(keys.data(), m, 0, scratch.data(), kHost), std::invalid_argument);
    EXPECT_THROW(kth_largest_key(keys.data(), m, m + 1, scratch.data(), kHost),
                 std::invalid_argument);
  }
}

TEST(SparseCpu, SelectAtLeastIsAscendingAndCounted) {
  const std::vector<float> v = {0.5f, -2.0f, 0.0f,
                                1.0f, -1.0f, std::numeric_limits<float>::quiet_NaN()};
  std::vector<std::uint32_t> idx(v.size());
  const std::uint32_t one = reference_key(1.0f);
  EXPECT_EQ(count_at_least(v.data(), v.size(), one, kHost), 4u);
  ASSERT_EQ(select_at_least(v.data(), v.size(), one, idx.data(), kHost), 4u);
  idx.resize(4);
  EXPECT_EQ(idx, (std::vector<std::uint32_t>{1, 3, 4, 5}));
  EXPECT_EQ(count_at_least(v.data(), v.size(), 0, kHost), v.size());
  EXPECT_EQ(count_at_least(v.data(), 0, 0, kHost), 0u);
}

TEST(SparseCpu, KeepTopKGivesTiesToLowerIndicesInIndexOrder) {
  const std::vector<float> v = {3, -1, 2, -3, 1, 2, 0, -2};
  std::vector<std::uint32_t> idx = {0, 1, 2, 3, 4, 5, 7};  // 6 is not a candidate
  std::vector<std::uint32_t> scratch(idx.size());
  // Keys 3, 1, 2, 3, 1, 2, 2: the top 4 are both 3s and the 2s at 2 and 5 (not 7).
  EXPECT_EQ(keep_top_k(v.data(), idx.data(), idx.size(), 4, scratch.data(), kHost),
            reference_key(2.0f));
  idx.resize(4);
  EXPECT_EQ(idx, (std::vector<std::uint32_t>{0, 2, 3, 5}));
  EXPECT_THROW(keep_top_k(v.data(), idx.data(), 4, 5, scratch.data(), kHost),
               std::invalid_argument);
  EXPECT_THROW(keep_top_k(v.data(), idx.data(), 4, 0, scratch.data(), kHost),
               std::invalid_argument);
}

TEST(SparseCpu, KeepTopKMatchesStableSortReference) {
  for (Dist dist : test_inputs::kAllDists) {
    const std::vector<float> v = make_values(dist, 5000, 3);
    std::vector<std::uint32_t> candidates(5000);
    std::iota(candidates.begin(), candidates.end(), 0u);
    for (std::size_t k : {std::size_t{1}, std::size_t{77}, std::size_t{2500}, std::size_t{5000}}) {
      std::vector<std::uint32_t> ref = candidates;
      std::stable_sort(ref.begin(), ref.end(), [&](std::uint32_t a, std::uint32_t b) {
        return reference_key(v[a]) > reference_key(v[b]);
      });
      ref.resize(k);
      std::sort(ref.begin(), ref.end());
      std::vector<std::uint32_t> idx = candidates, scratch(5000);
      keep_top_k(v.data(), idx.data(), idx.size(), k, scratch.data(), kHost);
      idx.resize(k);
      EXPECT_EQ(idx, ref) << test_inputs::dist_name(dist) << " k " << k;
    }
  }
}

TEST(SparseCpu, ExactTopkBySortGivesTiesToLowerIndicesInIndexOrder) {
  const std::vector<float> v = {3, -1, 2, -3, 1, 2, 0, -2};
  std::vector<std::uint32_t> idx(v.size()), scratch(v.size());
  // Keys 3, 1, 2, 3, 1, 2, 0, 2: the top 4 are both 3s and the 2s at 2 and 5 (not 7).
  EXPECT_EQ(exact_topk_by_sort(v.data(), v.size(), 4, idx.data(), scratch.data(), kHost),
            reference_key(2.0f));
  idx.resize(4);
  EXPECT_EQ(idx, (std::vector<std::uint32_t>{0, 2, 3, 5}));
  idx.resize(v.size());
  EXPECT_EQ(exact_topk_by_sort(v.data(), v.size(), 8, idx.data(), scratch.data(), kHost), 0u);
  EXPECT_EQ(idx, (std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_THROW(exact_topk_by_sort(v.data(), v.size(), 9, idx.data(), scratch.data(), kHost),
               std::invalid_argument);
  EXPECT_THROW(exact_topk_by_sort(v.data(), v.size(), 0, idx.data(), scratch.data(), kHost),
               std::invalid_argument);
}

// The same set as keep_top_k over every index, and as a stable sort written out here.
TEST(SparseCpu, ExactTopkBySortMatchesKeepTopKAndStableSortReference) {
  for (Dist dist : test_inputs::kAllDists) {
    const std::vector<float> v = make_values(dist, 5000, 4);
    std::vector<std::uint32_t> all(5000);
    std::iota(all.begin(), all.end(), 0u);
    for (std::size_t k : {std::size_t{1}, std::size_t{5}, std::size_t{2500}, std::size_t{5000}}) {
      std::vector<std::uint32_t> ref = all;
      std::stable_sort(ref.begin(), ref.end(), [&](std::uint32_t a, std::uint32_t b) {
        return reference_key(v[a]) > reference_key(v[b]);
      });
      const std::uint32_t ref_kth = reference_key(v[ref[k - 1]]);
      ref.resize(k);
      std::sort(ref.begin(), ref.end());
      std::vector<std::uint32_t> kept = all, scratch(5000), idx(5000);
      EXPECT_EQ(keep_top_k(v.data(), kept.data(), kept.size(), k, scratch.data(), kHost), ref_kth);
      kept.resize(k);
      EXPECT_EQ(exact_topk_by_sort(v.data(), v.size(), k, idx.data(), scratch.data(), kHost),
                ref_kth)
          << test_inputs::dist_name(dist) << " k " << k;
      idx.resize(k);
      EXPECT_EQ(idx, ref) << test_inputs::dist_name(dist) << " k " << k;
      EXPECT_EQ(idx, kept) << test_inputs::dist_name(dist) << " k " << k;
    }
  }
}

TEST(SparseCpu, PackZeroAndScatterAdd) {
  const std::vector<float> v = {1.5f, -2.0f, 3.0f, 4.0f};
  const std::vector<std::uint32_t> idx = {1, 3};
  std::vector<std::uint32_t> words(4);
  pack_pairs(idx.data(), 2, v.data(), words.data(), kHost);
  EXPECT_EQ(words, (std::vector<std::uint32_t>{1, float_bits(-2.0f), 3, float_bits(4.0f)}));

  std::vector<float> x = {10, 10, 10, 10};
  scatter_add_pairs(words.data(), 2, x.data(), kHost);
  EXPECT_EQ(x, (std::vector<float>{10, 8, 10, 14}));
  zero_at(x.data(), idx.data(), 2, kHost);
  EXPECT_EQ(x, (std::vector<float>{10, 0, 10, 0}));
}

TEST(SparseCpu, PairIndicesAndSortUniqueMergeSelections) {
  // Two ranks' pairs for one tensor, sharing indices 3 and 9.
  const std::vector<std::uint32_t> a = {3, float_bits(1.0f), 9, float_bits(2.0f), 12, 0};
  const std::vector<std::uint32_t> b = {0, float_bits(5.0f), 3, 0, 9, 0, 40, 0};
  std::vector<std::uint32_t> cand(7, 99);
  pair_indices(a.data(), 3, cand.data(), kHost);
  pair_indices(b.data(), 4, cand.data() + 3, kHost);
  EXPECT_EQ(cand, (std::vector<std::uint32_t>{3, 9, 12, 0, 3, 9, 40}));
  const std::size_t u = sort_unique(cand.data(), cand.size(), kHost);
  ASSERT_EQ(u, 5u);
  cand.resize(u);
  EXPECT_EQ(cand, (std::vector<std::uint32_t>{0, 3, 9, 12, 40}));
  EXPECT_EQ(sort_unique(cand.data(), 0, kHost), 0u);
}

TEST(SparseCpu, SplitByRegionGivesEachRangeItsIndicesRelativeToItsStart) {
  // Ranges of 10: 3 and 9 in range 0, none in 1 or 2, 30 and 39 in 3, 41 in 4, none in 5.
  const std::vector<std::uint32_t> idx = {3, 9, 30, 39, 41};
  std::vector<std::uint32_t> relative(5), starts(7, 99);
  split_by_region(idx.data(), 5, 10, 6, relative.data(), starts.data(), kHost);
  EXPECT_EQ(relative, (std::vector<std::uint32_t>{3, 9, 0, 9, 1}));
  EXPECT_EQ(starts, (std::vector<std::uint32_t>{0, 2, 2, 2, 4, 5, 5}));
  // The first index past range 0: every range before it starts at 0.
  split_by_region(idx.data() + 2, 3, 10, 6, relative.data(), starts.data(), kHost);
  EXPECT_EQ(starts, (std::vector<std::uint32_t>{0, 0, 0, 0, 2, 3, 3}));
  // Nothing selected: every range is empty; a range of 1 is the identity split.
  split_by_region(idx.data(), 0, 10, 3, relative.data(), starts.data(), kHost);
  EXPECT_EQ(std::vector<std::uint32_t>(starts.begin(), starts.begin() + 4),
            (std::vector<std::uint32_t>{0, 0, 0, 0}));
  const std::vector<std::uint32_t> dense = {0, 1, 2};
  split_by_region(dense.data(), 3, 1, 3, relative.data(), starts.data(), kHost);
  EXPECT_EQ(std::vector<std::uint32_t>(starts.begin(), starts.begin() + 4),
            (std::vector<std::uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(std::vector<std::uint32_t>(relative.begin(), relative.begin() + 3),
            (std::vector<std::uint32_t>{0, 0, 0}));
  EXPECT_THROW(split_by_region(idx.data(), 5, 0, 6, relative.data(), starts.data(), kHost),
               std::invalid_argument);
}

TEST(SparseCpu, CheckSparsePairsNamesTheFirstBadPair) {
  const auto pairs = [](std::vector<std::uint32_t> indices) {
    std::vector<std::uint32_t> words;
    for (std::uint32_t i : indices) words.insert(words.end(), {i, float_bits(1.0f)});
    return words;
  };
  auto ok = pairs({0, 2, 9});
  EXPECT_TRUE(check_sparse_pairs(ok.data(), 3, 10, kHost).ok());
  EXPECT_TRUE(check_sparse_pairs(ok.data(), 0, 0, kHost).ok());

  auto out = pairs({0, 10, 3});
  PairsCheck c = check_sparse_pairs(out.data(), 3, 10, kHost);
  EXPECT_EQ(c.problem, PairsProblem::kIndexOutOfRange);
  EXPECT_EQ(c.position, 1u);
  EXPECT_EQ(c.index, 10u);

  auto repeat = pairs({1, 4, 4, 20});
  c = check_sparse_pairs(repeat.data(), 4, 10, kHost);
  EXPECT_EQ(c.problem, PairsProblem::kNotIncreasing);
  EXPECT_EQ(c.position, 2u);
  EXPECT_EQ(c.index, 4u);
  EXPECT_EQ(c.previous_index, 4u);

  auto down = pairs({5, 3});
  c = check_sparse_pairs(down.data(), 2, 10, kHost);
  EXPECT_EQ(c.problem, PairsProblem::kNotIncreasing);
  EXPECT_EQ(c.position, 1u);
  EXPECT_EQ(c.previous_index, 5u);
}

// The host stream runs the host selector: same result as the Stream-less call.
TEST(SparseCpu, TopkSelectorOnTheHostStreamIsTheHostSelector) {
  const std::vector<float> v = make_values(Dist::kNormal, 100'003, 4);
  TopkSelector a, b;
  std::vector<std::uint32_t> out_a(1000), out_b(1000);
  const std::size_t count_a = a.select(v.data(), v.size(), 1000, 0.01, 9, out_a.data());
  const std::size_t count_b = b.select(v.data(), v.size(), 1000, 0.01, 9, out_b.data(), kHost);
  EXPECT_EQ(count_a, count_b);
  EXPECT_EQ(out_a, out_b);
  EXPECT_THROW(b.select(v.data(), v.size(), 10, 0.0, 9, out_b.data(), kHost),
               std::invalid_argument);
}

}  // namespace
}  // namespace gw::kernels
