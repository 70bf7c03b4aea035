// EpochSharder: disjoint per-rank batches, determinism, and the equivalence that n ranks with batch
// B see exactly what one rank with batch B*n sees (See Note [Epoch sharding]).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "reference_trainer/data/epoch_permutation.h"
#include "reference_trainer/data/sharder.h"

namespace gw::trainer {
namespace {

using ::testing::HasSubstr;

std::string invalid_argument_of(std::size_t num_samples, int world_size, int rank,
                                std::size_t batch) {
  try {
    EpochSharder sharder(num_samples, world_size, rank, batch, 1);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected std::invalid_argument";
  return "";
}

TEST(EpochSharderTest, ValidatesArguments) {
  EXPECT_THAT(invalid_argument_of(100, 0, 0, 4), HasSubstr("world_size must be >= 1, got 0"));
  EXPECT_THAT(invalid_argument_of(100, -2, 0, 4), HasSubstr("world_size must be >= 1, got -2"));
  EXPECT_THAT(invalid_argument_of(100, 4, -1, 4), HasSubstr("rank must be in [0, 4), got -1"));
  EXPECT_THAT(invalid_argument_of(100, 4, 4, 4), HasSubstr("rank must be in [0, 4), got 4"));
  EXPECT_THAT(invalid_argument_of(100, 4, 0, 0), HasSubstr("batch_per_rank must be >= 1"));
  EXPECT_THAT(invalid_argument_of(100, 4, 3, 26),
              HasSubstr("100 samples do not fill one global batch of batch_per_rank 26 x "
                        "world_size 4 = 104 samples"));
  EXPECT_THAT(invalid_argument_of(0, 1, 0, 1), HasSubstr("0 samples do not fill"));
  // Exactly one global batch is enough.
  EXPECT_NO_THROW(EpochSharder(100, 4, 3, 25, 1));
}

// Gradient accumulation (Note [Epoch sharding]): pass p of rank r takes what rank r*P + p of n*P
// ranks takes, and a rank's P passes together what its one pass of P times the batch takes.
TEST(EpochSharderTest, PassesAreTheSlicesOfMoreRanksAndOfALargerBatch) {
  const std::size_t n = 1000, batch = 8;
  const int ranks = 3, passes = 4;
  for (int rank = 0; rank < ranks; ++rank) {
    EpochSharder with_passes(n, ranks, rank, batch, 7, passes);
    EpochSharder larger(n, ranks, rank, batch * passes, 7);
    EXPECT_EQ(with_passes.global_batch(), batch * ranks * passes);
    EXPECT_EQ(with_passes.steps_per_epoch(), larger.steps_per_epoch());
    for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
      for (std::size_t step = 0; step < with_passes.steps_per_epoch(); ++step) {
        std::vector<std::size_t> joined, pass_batch;
        for (int pass = 0; pass < passes; ++pass) {
          with_passes.batch(epoch, step, pass_batch, pass);
          EpochSharder more_ranks(n, ranks * passes, rank * passes + pass, batch, 7);
          EXPECT_EQ(pass_batch, more_ranks.batch(epoch, step)) << rank << " " << pass;
          joined.insert(joined.end(), pass_batch.begin(), pass_batch.end());
        }
        EXPECT_EQ(joined, larger.batch(epoch, step)) << "rank " << rank << " step " << step;
      }
    }
  }
  EpochSharder s(n, 1, 0, batch, 7, passes);
  std::vector<std::size_t> out;
  EXPECT_THROW(s.batch(0, 0, out, passes), std::out_of_range);
  EXPECT_THROW(EpochSharder(n, 1, 0, batch, 7, 0), std::invalid_argument);
  EXPECT_FALSE(EpochSharder::fills_one_global_batch(63, 2, 8, 4));
  EXPECT_TRUE(EpochSharder::fills_one_global_batch(64, 2, 8, 4));
}

// The rule gradwire_train asks before building a run: the constructor's, without overflow.
TEST(EpochSharderTest, FillsOneGlobalBatchIsTheConstructorsRule) {
  EXPECT_TRUE(EpochSharder::fills_one_global_batch(100, 4, 25));
  EXPECT_FALSE(EpochSharder::fills_one_global_batch(100, 4, 26));
  EXPECT_FALSE(EpochSharder::fills_one_global_batch(0, 1, 1));
  EXPECT_FALSE(EpochSharder::fills_one_global_batch(100, 0, 1));
  const std::size_t wraps = std::numeric_limits<std::size_t>::max() / 2 + 1;  // x 2 wraps to 0
  EXPECT_FALSE(EpochSharder::fills_one_global_batch(100, 2, wraps));
  for (const std::size_t n : {0, 1, 63, 64, 65, 1000}) {
    for (const std::size_t batch : {1, 16, 17, 32}) {
      bool built = true;
      try {
        EpochSharder sharder(n, 4, 0, batch, 1);
      } catch (const std::invalid_argument&) {
        built = false;
      }
      EXPECT_EQ(EpochSharder::fills_one_global_batch(n, 4, batch), built) << n << " " << batch;
    }
  }
}

TEST(EpochSharderTest, StepsDropTheIncompleteLastGlobalBatch) {
  EpochSharder sharder(100, 3, 1, 7, 1);
  EXPECT_EQ(sharder.global_batch(), 21u);
  EXPECT_EQ(sharder.steps_per_epoch(), 4u);  // 84 of 100 samples; the last 16 are dropped
  EXPECT_EQ(EpochSharder(84, 3, 0, 7, 1).steps_per_epoch(), 4u);
  EXPECT_EQ(EpochSharder(21, 3, 2, 7, 1).steps_per_epoch(), 1u);
  EXPECT_EQ(sharder.batch(0, 3).size(), 7u);
  EXPECT_THROW(sharder.batch(0, 4), std::out_of_range);
}

// (num_samples, world_size, batch_per_rank): divisible and not, world sizes not powers of two.
class ShardingTest : public ::testing::TestWithParam<std::tuple<std::size_t, int, std::size_t>> {};

INSTANTIATE_TEST_SUITE_P(Shapes, ShardingTest,
                         ::testing::Values(std::make_tuple(1000, 1, 10),
                                           std::make_tuple(1000, 2, 10),
                                           std::make_tuple(1003, 3, 7), std::make_tuple(64, 4, 16),
                                           std::make_tuple(997, 5, 1),
                                           std::make_tuple(60000, 4, 64)));

TEST_P(ShardingTest, RanksAreDisjointAndCoverTheEpoch) {
  const auto [num_samples, world_size, batch] = GetParam();
  std::vector<EpochSharder> ranks;
  for (int r = 0; r < world_size; ++r) ranks.emplace_back(num_samples, world_size, r, batch, 77);
  const std::size_t steps = ranks[0].steps_per_epoch();
  ASSERT_EQ(steps, num_samples / (batch * world_size));

  for (std::uint64_t epoch : {0u, 1u, 5u}) {
    std::set<std::size_t> seen_this_epoch;
    for (std::size_t step = 0; step < steps; ++step) {
      std::set<std::size_t> seen_this_step;
      for (auto& rank : ranks) {
        const std::vector<std::size_t> b = rank.batch(epoch, step);
        ASSERT_EQ(b.size(), batch);
        for (std::size_t sample : b) {
          ASSERT_LT(sample, num_samples);
          ASSERT_TRUE(seen_this_step.insert(sample).second)
              << "sample " << sample << " given to two ranks at step " << step;
        }
      }
      seen_this_epoch.insert(seen_this_step.begin(), seen_this_step.end());
    }
    EXPECT_EQ(seen_this_epoch.size(), steps * batch * world_size) << "epoch " << epoch;
  }
}

TEST_P(ShardingTest, EveryRankComputesTheSamePermutation) {
  const auto [num_samples, world_size, batch] = GetParam();
  EpochSharder first(num_samples, world_size, 0, batch, 5);
  EpochSharder last(num_samples, world_size, world_size - 1, batch, 5);
  EXPECT_EQ(first.permutation(2), last.permutation(2));
  EXPECT_EQ(first.permutation(2), epoch_permutation(num_samples, 5, 2));
}

TEST(EpochSharderTest, OneRankWithBatchBnIsNRanksWithBatchBConcatenated) {
  const std::size_t num_samples = 1000;  // not a multiple of 3 * 8
  const std::size_t batch = 8;
  for (int n : {2, 3, 4}) {
    EpochSharder single(num_samples, 1, 0, batch * static_cast<std::size_t>(n), 123);
    std::vector<EpochSharder> ranks;
    for (int r = 0; r < n; ++r) ranks.emplace_back(num_samples, n, r, batch, 123);
    ASSERT_EQ(single.steps_per_epoch(), ranks[0].steps_per_epoch()) << "n = " << n;
    for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
      for (std::size_t step = 0; step < single.steps_per_epoch(); ++step) {
        std::vector<std::size_t> concatenated;
        for (auto& rank : ranks) {
          const std::vector<std::size_t> b = rank.batch(epoch, step);
          concatenated.insert(concatenated.end(), b.begin(), b.end());
        }
        ASSERT_EQ(single.batch(epoch, step), concatenated)
            << "n = " << n << ", epoch " << epoch << ", step " << step;
      }
    }
  }
}

TEST(EpochSharderTest, IsDeterministicInSeedAndEpoch) {
  EpochSharder a(500, 2, 1, 10, 42);
  EpochSharder b(500, 2, 1, 10, 42);
  EpochSharder other_seed(500, 2, 1, 10, 43);
  for (std::size_t step = 0; step < a.steps_per_epoch(); ++step) {
    ASSERT_EQ(a.batch(4, step), b.batch(4, step));
  }
  EXPECT_NE(a.batch(4, 0), other_seed.batch(4, 0));
  EXPECT_NE(a.batch(4, 0), a.batch(5, 0));
  // Going back to an earlier epoch (the cache holds one) gives the same batches again.
  const std::vector<std::size_t> again = a.batch(4, 7);
  a.batch(9, 0);
  EXPECT_EQ(a.batch(4, 7), again);
}

TEST(EpochSharderTest, BatchIntoReusesTheBuffer) {
  EpochSharder sharder(300, 3, 2, 10, 8);
  std::vector<std::size_t> out;
  sharder.batch(0, 0, out);
  const std::size_t* data = out.data();
  for (std::size_t step = 1; step < sharder.steps_per_epoch(); ++step) {
    sharder.batch(0, step, out);
    EXPECT_EQ(out, sharder.batch(0, step));
  }
  EXPECT_EQ(out.data(), data);
}

Dataset numbered_dataset(std::size_t samples, std::size_t rows, std::size_t cols) {
  Dataset data;
  data.rows = rows;
  data.cols = cols;
  for (std::size_t s = 0; s < samples; ++s) {
    for (std::size_t f = 0; f < rows * cols; ++f) {
      data.images.push_back(static_cast<float>(s * 100 + f));
    }
    data.labels.push_back(static_cast<std::uint8_t>(s % 10));
  }
  return data;
}

TEST(GatherTest, CopiesTheIndexedSamples) {
  const Dataset data = numbered_dataset(20, 2, 3);
  std::vector<float> images;
  std::vector<std::uint8_t> labels;
  gather(data, {13, 0, 7}, images, labels);
  ASSERT_EQ(images.size(), 18u);
  EXPECT_EQ(labels, (std::vector<std::uint8_t>{3, 0, 7}));
  const std::vector<std::size_t> order = {13, 0, 7};
  for (std::size_t i = 0; i < order.size(); ++i) {
    for (std::size_t f = 0; f < 6; ++f) {
      EXPECT_EQ(images[i * 6 + f], static_cast<float>(order[i] * 100 + f));
    }
  }
}

TEST(GatherTest, DoesNotReallocateOnceWarm) {
  const Dataset data = numbered_dataset(100, 4, 4);
  EpochSharder sharder(100, 2, 0, 8, 3);
  std::vector<std::size_t> indices;
  std::vector<float> images;
  std::vector<std::uint8_t> labels;
  sharder.batch(0, 0, indices);
  gather(data, indices, images, labels);
  const float* images_data = images.data();
  const std::uint8_t* labels_data = labels.data();
  for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
    for (std::size_t step = 0; step < sharder.steps_per_epoch(); ++step) {
      sharder.batch(epoch, step, indices);
      gather(data, indices, images, labels);
      ASSERT_EQ(images.data(), images_data);
      ASSERT_EQ(labels.data(), labels_data);
      ASSERT_EQ(labels[0], data.labels[indices[0]]);
    }
  }
}

TEST(GatherTest, RejectsAnOutOfRangeIndex) {
  const Dataset data = numbered_dataset(5, 1, 1);
  std::vector<float> images;
  std::vector<std::uint8_t> labels;
  try {
    gather(data, {1, 5}, images, labels);
    ADD_FAILURE() << "expected std::out_of_range";
  } catch (const std::out_of_range& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("sample index 5 is out of range"));
  }
}

}  // namespace
}  // namespace gw::trainer
