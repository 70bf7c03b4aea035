#include "compressors/sparse_message.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/sparse_wire.h"

#include "compressor_test_util.h"

namespace gw::compressors {
namespace {

using testing::make_bucket;

std::uint32_t bits(float f) {
  std::uint32_t w;
  std::memcpy(&w, &f, sizeof w);
  return w;
}

struct TwoTensorCase {
  std::vector<float> storage;
  BucketView bucket;
  ExchangePlan plan;
  TwoTensorCase() {
    bucket = make_bucket(storage, {3, 10, 6});  // tensor 0 dense, tensors 1 and 2 sparse
    plan.dense = {0};
    plan.sparse = {1, 2};
    plan.k = {2, 3};
  }
};

TEST(SparseMessage, WriterLayoutAndExactSumOverRanks) {
  TwoTensorCase c;
  std::vector<float> t1 = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<float> t2 = {-1, -2, -3, -4, -5, -6};
  SparseMessageWriter a, b;
  const std::uint32_t a1[] = {0, 9}, a2[] = {5};
  a.append(a1, 2, t1.data());
  a.append(a2, 1, t2.data());
  const std::uint32_t b1[] = {9}, b2[] = {0, 2, 5};
  b.append(b1, 1, t1.data());
  b.append(b2, 3, t2.data());
  // count, (index, value) pairs, per tensor.
  const std::vector<std::uint32_t> expected_a = {2, 0, bits(0), 9, bits(9), 1, 5, bits(-6)};
  EXPECT_EQ(a.words(), expected_a);
  EXPECT_EQ(max_message_words(c.plan), 2u + 2 * (2 + 3));

  std::vector<std::uint32_t> words = a.words();
  const std::vector<std::uint32_t> b_words = b.words();  // a host copy each call
  words.insert(words.end(), b_words.begin(), b_words.end());
  const std::vector<std::size_t> sizes = {a.words().size(), b_words.size()};
  std::fill(c.storage.begin(), c.storage.end(), 7.0f);  // the dense tensor stays untouched
  SparseSegments sent;
  validate_sparse_messages(c.bucket, c.plan, words.data(), sizes, sent);
  accumulate_sparse_messages(c.bucket, c.plan, words.data(), sent);
  const std::vector<float> expected = {7,  7, 7,                          // dense
                                       0,  0, 0,  0, 0, 0,  0, 0, 0, 18,  // 9 + 9
                                       -1, 0, -3, 0, 0, -12};             // -1, -3, -6 - 6
  EXPECT_EQ(c.storage, expected);
}

// Builds rank 0's valid message on `wire` and a rank-1 message given as raw words; checks the
// error names rank 1 and what is wrong, and leaves the bucket untouched.
void expect_rejected(const std::vector<std::uint32_t>& bad, const std::string& fragment,
                     SparseWire wire = SparseWire::kPairs) {
  TwoTensorCase c;
  c.plan.sparse_wire = wire;
  std::fill(c.storage.begin(), c.storage.end(), 3.0f);
  const std::vector<float> before = c.storage;
  // Tensor 1: index 4, value 1.0; tensor 2: no pairs. Compact: width 3, then the value.
  const std::vector<std::uint32_t> good =
      wire == SparseWire::kPairs ? std::vector<std::uint32_t>{1, 4, bits(1.0f), 0}
                                 : std::vector<std::uint32_t>{1, 2, 3, 4, 0x3c00u, 0, 0};
  std::vector<std::uint32_t> words = good;
  words.insert(words.end(), bad.begin(), bad.end());
  const std::vector<std::size_t> sizes = {good.size(), bad.size()};
  try {
    SparseSegments sent;
    validate_sparse_messages(c.bucket, c.plan, words.data(), sizes, sent);
    FAIL() << "accepted a malformed message";
  } catch (const PayloadError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("from rank 1"), std::string::npos) << what;
    EXPECT_NE(what.find(fragment), std::string::npos) << what;
  }
  EXPECT_EQ(c.storage, before);
}

TEST(SparseMessage, RejectsAnIndexOutOfRange) {
  expect_rejected({1, 10, bits(1.0f), 0}, "index 10, outside [0, 10)");
  expect_rejected({0, 1, 6, bits(1.0f)}, "index 6, outside [0, 6)");
  expect_rejected({1, 0xFFFFFFFFu, bits(1.0f), 0}, "outside [0, 10)");
}

// Regression (fuzz_sparse_message): an index sent twice for one tensor was accepted and its
// value added twice. Indices come strictly increasing, so a repeat is refused, and so is any other
// order (the first pair not above the one before it is named).
TEST(SparseMessage, RejectsAnIndexSentTwiceOrOutOfOrder) {
  expect_rejected({2, 4, bits(1.0f), 4, bits(2.0f), 0},
                  "tensor 1 pair 1 has index 4, not above pair 0's index 4");
  expect_rejected({0, 3, 2, bits(1.0f), 5, bits(1.0f), 5, bits(1.0f)},
                  "tensor 2 pair 2 has index 5, not above pair 1's index 5");
  expect_rejected({0, 3, 0, bits(1.0f), 0, bits(1.0f), 0, bits(1.0f)},
                  "tensor 2 pair 1 has index 0, not above pair 0's index 0");
  expect_rejected({2, 5, bits(1.0f), 4, bits(2.0f), 0}, "strictly increasing order");
}

// An index may come once per tensor from each rank: in another tensor or from another rank it is
// not a repeat. A rejection leaves nothing behind that changes the next call's result.
TEST(SparseMessage, AnIndexRepeatsAcrossTensorsAndRanksAndTheSegmentsAreReusable) {
  TwoTensorCase c;
  const std::vector<std::uint32_t> rank0 = {1, 4, bits(1.0f), 1, 4, bits(2.0f)};
  const std::vector<std::uint32_t> rank1 = {2, 4, bits(4.0f), 5, bits(0.5f), 1, 4, bits(8.0f)};
  const std::vector<std::uint32_t> repeat = {2, 4, bits(1.0f), 4, bits(1.0f), 0};
  SparseSegments sent;
  std::vector<std::uint32_t> words = rank0;
  words.insert(words.end(), repeat.begin(), repeat.end());
  EXPECT_THROW(
      validate_sparse_messages(c.bucket, c.plan, words.data(), {rank0.size(), repeat.size()}, sent),
      PayloadError);
  words = rank0;
  words.insert(words.end(), rank1.begin(), rank1.end());
  const std::vector<std::size_t> sizes = {rank0.size(), rank1.size()};
  validate_sparse_messages(c.bucket, c.plan, words.data(), sizes, sent);
  accumulate_sparse_messages(c.bucket, c.plan, words.data(), sent);
  EXPECT_EQ(c.storage[3 + 4], 1.0f + 4.0f);       // tensor 1, index 4: ranks 0 and 1
  EXPECT_EQ(c.storage[3 + 5], 0.5f);              // tensor 1, index 5: rank 1
  EXPECT_EQ(c.storage[3 + 10 + 4], 2.0f + 8.0f);  // tensor 2, index 4: ranks 0 and 1
}

TEST(SparseMessage, RejectsCountsThatDoNotMatchTheMessage) {
  expect_rejected({2, 1, bits(1.0f), 0}, "announces 2 pairs but only 1 follow");
  expect_rejected({3, 1, 0, 2, 0, 3, 0, 0}, "more than the 2 a rank may send");
  expect_rejected({1, 1, bits(1.0f)}, "ends after 1 of 2 tensors");
  expect_rejected({0, 0, 99}, "1 words left over");
  expect_rejected({}, "ends after 0 of 2 tensors");
}

// --- The compact wire (Note [Compact sparse wire]) -----------------------------------------------

TEST(SparseMessage, CompactWireSumsOverRanksInFp16) {
  TwoTensorCase c;
  c.plan.sparse_wire = SparseWire::kCompact;
  std::vector<float> t1 = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9.001f};  // 9.001: not a binary16
  std::vector<float> t2 = {-1, -2, -3, -4, -5, -6};
  SparseMessageWriter a, b;
  const std::uint32_t a1[] = {0, 9}, a2[] = {5};
  a.append(a1, 2, t1.data(), kernels::Stream::host(), SparseWire::kCompact);
  a.append(a2, 1, t2.data(), kernels::Stream::host(), SparseWire::kCompact);
  const std::uint32_t b1[] = {9}, b2[] = {0, 2, 5};
  b.append(b1, 1, t1.data(), kernels::Stream::host(), SparseWire::kCompact);
  b.append(b2, 3, t2.data(), kernels::Stream::host(), SparseWire::kCompact);
  // Tensor 1: 2 pairs, 2 block words, width 4 (gaps 0 and 8), gaps, values 0 and 9.0 (the
  // binary16 nearest 9.001); tensor 2: 1 pair, 2 block words, width 3 (gap 5), values -6.
  const std::vector<std::uint32_t> expected_a = {2, 2, 4, 0u | (8u << 4), 0x48800000u, 1,
                                                 2, 3, 5, 0xc600u};
  EXPECT_EQ(a.words(), expected_a);
  EXPECT_EQ(max_message_words(c.plan), kernels::wire_max_words(2) + kernels::wire_max_words(3));

  std::vector<std::uint32_t> words = a.words();
  const std::vector<std::uint32_t> b_words = b.words();
  words.insert(words.end(), b_words.begin(), b_words.end());
  const std::vector<std::size_t> sizes = {a.words().size(), b_words.size()};
  std::fill(c.storage.begin(), c.storage.end(), 7.0f);
  SparseSegments sent;
  validate_sparse_messages(c.bucket, c.plan, words.data(), sizes, sent);
  accumulate_sparse_messages(c.bucket, c.plan, words.data(), sent);
  const std::vector<float> expected = {7,  7, 7,                          // dense
                                       0,  0, 0,  0, 0, 0,  0, 0, 0, 18,  // 9 + 9 in fp16
                                       -1, 0, -3, 0, 0, -12};
  EXPECT_EQ(c.storage, expected);
}

// Note [Sparse allgather in one round]: a padded block's room. The compact bound holds for the
// widest gaps a tensor allows (every block's largest gap spread as evenly as the size affords),
// for random selections of every count up to k, and stays within 15% of a random selection's
// length at DGC's densities (what a padded block adds to the allgatherv's bytes) with binary16
// values, 30% with low-bit ones.
TEST(SparseMessage, CompactSegmentBoundHoldsForTheWidestGapsAndIsTight) {
  std::mt19937 rng(7);
  SparseWire wire = SparseWire::kCompact;
  auto length = [&wire](const std::vector<std::uint32_t>& indices, std::size_t numel) {
    const std::vector<float> v(numel, 1.5f);
    SparseMessageWriter w;
    w.append(indices.data(), indices.size(), v.data(), kernels::Stream::host(), wire);
    return w.size();
  };
  auto random_selection = [&](std::size_t c, std::size_t numel) {
    std::vector<std::uint32_t> all(numel);
    std::iota(all.begin(), all.end(), 0u);
    std::vector<std::uint32_t> out;
    std::sample(all.begin(), all.end(), std::back_inserter(out), c, rng);
    return out;  // ascending: sample keeps the order
  };
  // c pairs whose blocks' first gaps take the whole budget numel - c, spread evenly in powers
  // of two (the widths the bound's argument maximises), the other gaps 0.
  auto widest = [](std::size_t c, std::size_t numel) {
    const std::size_t blocks = kernels::wire_blocks(c), budget = numel - c;
    std::vector<std::size_t> gap(blocks, 0);
    if (budget < blocks) {
      for (std::size_t b = 0; b < budget; ++b) gap[b] = 1;
    } else {
      std::size_t w = 1;
      while (w < 32 && blocks * (std::size_t{1} << w) <= budget) ++w;
      const std::size_t cost = std::size_t{1} << (w - 1);
      std::size_t left = budget - blocks * cost;
      for (std::size_t b = 0; b < blocks; ++b) {
        gap[b] = cost;
        if (w < 32 && left >= cost) {
          gap[b] = 2 * cost;
          left -= cost;
        }
      }
    }
    std::vector<std::uint32_t> out;
    std::int64_t at = -1;
    for (std::size_t j = 0; j < c; ++j) {
      at += 1 + static_cast<std::int64_t>(
                    j % kernels::kWireBlockPairs == 0 ? gap[j / kernels::kWireBlockPairs] : 0);
      out.push_back(static_cast<std::uint32_t>(at));
    }
    EXPECT_LE(at + 1, static_cast<std::int64_t>(numel));  // every index below numel
    return out;
  };
  const std::vector<std::pair<std::size_t, std::size_t>> cases = {
      {1, 1},      {10, 10},    {33, 7},       {100, 64},     {512, 256},
      {1024, 256}, {5120, 256}, {524288, 525}, {802816, 803}, {1u << 22, 4195}};
  for (const SparseWire w : {SparseWire::kCompact, SparseWire::kCompact4, SparseWire::kCompact2}) {
    wire = w;
    const unsigned bits = wire_value_bits(w);
    for (const auto& [numel, k] : cases) {
      SCOPED_TRACE(std::to_string(bits) + "-bit values");
      const std::size_t bound = compact_segment_most_words(k, numel, bits);
      EXPECT_LE(bound, kernels::wire_max_words(k, bits));
      for (std::size_t c : {std::size_t{0}, std::size_t{1}, k / 3, k - k / 7, k}) {
        EXPECT_LE(length(widest(c, numel), numel), bound) << numel << " " << k << " " << c;
        for (int trial = 0; trial < 3; ++trial) {
          EXPECT_LE(length(random_selection(c, numel), numel), bound)
              << numel << " " << k << " " << c;
        }
      }
      if (numel >= 100 * k) {
        // The bound's excess is in the gap words alone, so it weighs more beside the smaller
        // low-bit values (the ratios are printed).
        const double most = bits == 16 ? 1.15 : 1.3;
        const std::size_t typical = length(random_selection(k, numel), numel);
        std::printf(
            "numel %zu, k %zu, %u-bit values: the padded room is %.3fx a random "
            "selection's length\n",
            numel, k, bits, static_cast<double>(bound) / static_cast<double>(typical));
        EXPECT_LE(static_cast<double>(bound), most * static_cast<double>(typical))
            << numel << " " << k << ": the bound pads too much";
      }
    }
  }
  // The pairs wire needs no bound: a rank selecting its k sends 1 + 2k words per tensor.
  TwoTensorCase c;
  EXPECT_EQ(padded_message_words(c.bucket, c.plan), max_message_words(c.plan));
  c.plan.sparse_wire = SparseWire::kCompact;
  EXPECT_EQ(padded_message_words(c.bucket, c.plan),
            compact_segment_most_words(2, 10) + compact_segment_most_words(3, 6));
  c.plan.sparse_wire = SparseWire::kCompact2;
  EXPECT_EQ(padded_message_words(c.bucket, c.plan),
            compact_segment_most_words(2, 10, 2) + compact_segment_most_words(3, 6, 2));
}

TEST(SparseMessage, CompactWireRejectsEveryFlawNamingTheRank) {
  expect_rejected({1, 2, 4, 10, 0x3c00u, 0, 0}, "tensor 1 pair 0 has index 10, outside [0, 10)",
                  SparseWire::kCompact);
  expect_rejected({3, 2, 4, 10, 0x3c00u, 0, 0}, "tensor 1 has 3 pairs, more than the 2",
                  SparseWire::kCompact);
  expect_rejected({1, 2, 40, 1, 0x3c00u, 0, 0}, "width byte 0 = 40", SparseWire::kCompact);
  expect_rejected({1, 3, 3, 4, 0x3c00u, 0, 0, 0}, "announces 3 block words; its gap widths give 2",
                  SparseWire::kCompact);
  expect_rejected({1, 2, 3, 4}, "announces 1 pairs in 5 words, but only 4 are left",
                  SparseWire::kCompact);
  expect_rejected({1, 2, 3, 4, 0x3c00u}, "it ends after 1 of 2 tensors", SparseWire::kCompact);
  expect_rejected({1, 2, 3, 4, 0x3c00u, 0, 0, 9}, "1 words left over", SparseWire::kCompact);
}

}  // namespace
}  // namespace gw::compressors
