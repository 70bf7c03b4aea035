#include "fusion/bucket_plan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>

namespace gw::fusion {
namespace {

struct Expected {
  std::size_t begin, end, offset, numel;
};

void expect_buckets(const BucketPlan& plan, const std::vector<Expected>& want) {
  ASSERT_EQ(plan.size(), want.size());
  for (std::size_t b = 0; b < want.size(); ++b) {
    SCOPED_TRACE("bucket " + std::to_string(b));
    EXPECT_EQ(plan.buckets[b].index, b);
    EXPECT_EQ(plan.buckets[b].begin, want[b].begin);
    EXPECT_EQ(plan.buckets[b].end, want[b].end);
    EXPECT_EQ(plan.buckets[b].offset, want[b].offset);
    EXPECT_EQ(plan.buckets[b].numel, want[b].numel);
  }
}

TEST(BucketPlan, FillsInReverseRegistrationOrderUpToTheThreshold) {
  // 40 + 30 floats are exactly 280 bytes: one bucket; 20 more would pass it.
  const BucketPlan plan = plan_buckets({10, 20, 30, 40}, 280);
  expect_buckets(plan, {{2, 4, 30, 70}, {0, 2, 0, 30}});
  EXPECT_EQ(plan.bucket_of, (std::vector<std::size_t>{1, 1, 0, 0}));
  // One byte less and 30 no longer fits beside 40; 30 + 20 + 10 do fit together.
  expect_buckets(plan_buckets({10, 20, 30, 40}, 279), {{3, 4, 60, 40}, {0, 3, 0, 60}});
}

TEST(BucketPlan, ThresholdZeroGivesEveryParameterItsOwnBucket) {
  const BucketPlan plan = plan_buckets({3, 1, 4}, 0);
  expect_buckets(plan, {{2, 3, 4, 4}, {1, 2, 3, 1}, {0, 1, 0, 3}});
}

TEST(BucketPlan, ALargeThresholdGivesOneBucket) {
  const BucketPlan plan = plan_buckets({3, 1, 4}, std::size_t{1} << 40);
  expect_buckets(plan, {{0, 3, 0, 8}});
  EXPECT_EQ(plan.bucket_of, (std::vector<std::size_t>{0, 0, 0}));
}

TEST(BucketPlan, ATensorLargerThanTheThresholdGetsABucketOfItsOwn) {
  // 5 floats = 20 bytes fit in 100; 1000 floats do not, and nothing joins them.
  const BucketPlan plan = plan_buckets({5, 1000, 5}, 100);
  expect_buckets(plan, {{2, 3, 1005, 5}, {1, 2, 5, 1000}, {0, 1, 0, 5}});
}

TEST(BucketPlan, ElementSizeCountsInTheThreshold) {
  // fp16 gradients: 2 bytes each, so twice as many elements fit.
  expect_buckets(plan_buckets({10, 10, 10}, 40, 2), {{1, 3, 10, 20}, {0, 1, 0, 10}});
  expect_buckets(plan_buckets({10, 10, 10}, 40, 4), {{2, 3, 20, 10}, {1, 2, 10, 10}, {0, 1, 0, 10}});
}

TEST(BucketPlan, RandomLayoutsAreCoveredContiguouslyAndGreedily) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<std::size_t> numels(1 + rng() % 60);
    for (auto& n : numels) n = 1 + rng() % 5000;
    const std::size_t threshold = rng() % 40000;
    const BucketPlan plan = plan_buckets(numels, threshold);
    SCOPED_TRACE("trial " + std::to_string(trial));
    std::size_t total = 0;
    for (std::size_t n : numels) total += n;
    // Bucket 0 ends the flat buffer; each next bucket ends where the previous one begins.
    std::size_t expect_end_param = numels.size(), expect_end_offset = total;
    for (const Bucket& b : plan.buckets) {
      ASSERT_EQ(b.end, expect_end_param);
      ASSERT_LT(b.begin, b.end);
      ASSERT_EQ(b.offset + b.numel, expect_end_offset);
      std::size_t numel = 0;
      for (std::size_t p = b.begin; p < b.end; ++p) {
        numel += numels[p];
        ASSERT_EQ(plan.bucket_of[p], b.index);
      }
      ASSERT_EQ(numel, b.numel);
      // Within the threshold unless it is one oversized tensor; and greedy: the next parameter
      // down would not have fit.
      if (b.end - b.begin > 1) ASSERT_LE(b.numel * 4, threshold);
      if (b.begin > 0) ASSERT_GT((b.numel + numels[b.begin - 1]) * 4, threshold);
      expect_end_param = b.begin;
      expect_end_offset = b.offset;
    }
    EXPECT_EQ(expect_end_param, 0u);
    EXPECT_EQ(expect_end_offset, 0u);
  }
}

TEST(BucketPlan, RejectsEmptyLayoutsAndEmptyTensors) {
  EXPECT_THROW(plan_buckets({}, 100), std::invalid_argument);
  EXPECT_THROW(plan_buckets({4, 0, 4}, 100), std::invalid_argument);
}

TEST(BucketPlan, ThresholdFromMiB) {
  EXPECT_EQ(threshold_bytes_from_mib(25), 26214400u);
  EXPECT_EQ(threshold_bytes_from_mib(0.5), 524288u);
  EXPECT_EQ(threshold_bytes_from_mib(0), 0u);
  EXPECT_THROW(threshold_bytes_from_mib(-1), std::invalid_argument);
  EXPECT_THROW(threshold_bytes_from_mib(std::nan("")), std::invalid_argument);
}

TEST(BucketPlan, DescribesSizes) {
  EXPECT_EQ(plan_buckets({250000, 500000}, 0).describe(4), "2 buckets of 2.00 MB, 1.00 MB");
  EXPECT_EQ(plan_buckets({250000}, 0).describe(4), "1 bucket of 1.00 MB");
}

}  // namespace
}  // namespace gw::fusion
