// Streaming DiLoCo's fragments (fusion/fragments.h): runs of whole tensors of about equal size,
// the fusion buckets cut at their boundaries, and the staggered schedule.
#include "fusion/fragments.h"

#include <gtest/gtest.h>

#include <numeric>
#include <stdexcept>

namespace gw::fusion {
namespace {

// The reference MLP's tensors (784-1024-512-10, weights and biases).
const std::vector<std::size_t> kMlp = {784 * 1024, 1024, 1024 * 512, 512, 512 * 10, 10};

TEST(Fragments, OneFragmentIsTheFusionPlanItself) {
  for (std::size_t threshold : {std::size_t{1}, std::size_t{64 << 10}, std::size_t{64 << 20}}) {
    const BucketPlan plan = plan_buckets(kMlp, threshold);
    const FragmentPlan one = plan_fragments(plan, kMlp, 1);
    ASSERT_EQ(one.buckets.size(), plan.size());
    for (std::size_t b = 0; b < plan.size(); ++b) {
      EXPECT_EQ(one.buckets.buckets[b].index, plan.buckets[b].index);
      EXPECT_EQ(one.buckets.buckets[b].begin, plan.buckets[b].begin);
      EXPECT_EQ(one.buckets.buckets[b].end, plan.buckets[b].end);
      EXPECT_EQ(one.buckets.buckets[b].offset, plan.buckets[b].offset);
      EXPECT_EQ(one.buckets.buckets[b].numel, plan.buckets[b].numel);
    }
    EXPECT_EQ(one.buckets.bucket_of, plan.bucket_of);
    EXPECT_EQ(one.numel[0], std::accumulate(kMlp.begin(), kMlp.end(), std::size_t{0}));
  }
}

TEST(Fragments, RunsOfWholeTensorsCoverEveryBucketOnce) {
  const std::vector<std::size_t> sizes = {7, 300, 5, 5, 900, 41, 41, 2, 600, 1};
  for (std::size_t threshold : {std::size_t{1}, std::size_t{2000}, std::size_t{1 << 20}}) {
    const BucketPlan plan = plan_buckets(sizes, threshold);
    for (std::size_t f = 1; f <= sizes.size(); ++f) {
      SCOPED_TRACE("threshold " + std::to_string(threshold) + ", " + std::to_string(f));
      const FragmentPlan fp = plan_fragments(plan, sizes, f);
      ASSERT_EQ(fp.first.size(), f + 1);
      EXPECT_EQ(fp.first.front(), 0u);
      EXPECT_EQ(fp.first.back(), sizes.size());
      std::vector<int> covered(sizes.size(), 0);
      for (std::size_t g = 0; g < f; ++g) {
        EXPECT_LT(fp.first[g], fp.first[g + 1]);  // at least one tensor
        std::size_t floats = 0;
        for (std::size_t b : fp.buckets_of[g]) {
          const Bucket& piece = fp.buckets.buckets[b];
          EXPECT_GE(piece.begin, fp.first[g]);
          EXPECT_LE(piece.end, fp.first[g + 1]);
          // Inside one bucket of the fusion plan.
          EXPECT_EQ(plan.bucket_of[piece.begin], plan.bucket_of[piece.end - 1]);
          for (std::size_t p = piece.begin; p < piece.end; ++p) {
            ++covered[p];
            EXPECT_EQ(fp.buckets.bucket_of[p], b);
          }
          floats += piece.numel;
        }
        EXPECT_EQ(floats, fp.numel[g]);
      }
      for (int c : covered) EXPECT_EQ(c, 1);
      // Launch order is kept: the pieces of an earlier bucket come first.
      for (std::size_t b = 1; b < fp.buckets.size(); ++b) {
        EXPECT_LE(plan.bucket_of[fp.buckets.buckets[b - 1].begin],
                  plan.bucket_of[fp.buckets.buckets[b].begin]);
      }
    }
  }
}

TEST(Fragments, BoundariesFallNearEqualShares) {
  const std::vector<std::size_t> even(8, 100);
  const FragmentPlan four = plan_fragments(plan_buckets(even, 1 << 20), even, 4);
  EXPECT_EQ(four.first, (std::vector<std::size_t>{0, 2, 4, 6, 8}));
  // The MLP's first weight is 60% of it: two fragments are that weight and the rest.
  const FragmentPlan two = plan_fragments(plan_buckets(kMlp, 1 << 20), kMlp, 2);
  EXPECT_EQ(two.first, (std::vector<std::size_t>{0, 1, 6}));
}

TEST(Fragments, MoreFragmentsThanTensorsIsRefused) {
  const BucketPlan plan = plan_buckets(kMlp, 1 << 20);
  EXPECT_THROW(plan_fragments(plan, kMlp, 0), std::invalid_argument);
  EXPECT_THROW(plan_fragments(plan, kMlp, 7), std::invalid_argument);
  EXPECT_NO_THROW(plan_fragments(plan, kMlp, 6));
}

TEST(Fragments, ScheduleIsStaggeredAndOneFragmentIsDilocos) {
  for (std::int64_t period : {1, 3, 8}) {
    for (std::int64_t step = 0; step < 50; ++step) {
      EXPECT_EQ(fragment_syncs_after(step, 0, 1, period), (step + 1) % period == 0);
    }
  }
  // H = 8, four fragments: fragment f after steps 7 + 2f, 15 + 2f, ...
  for (std::size_t f = 0; f < 4; ++f) {
    std::vector<std::int64_t> after;
    for (std::int64_t step = 0; step < 32; ++step) {
      if (fragment_syncs_after(step, f, 4, 8)) after.push_back(step);
    }
    const std::int64_t first = 7 + 2 * static_cast<std::int64_t>(f);
    std::vector<std::int64_t> want;
    for (std::int64_t s = first; s < 32; s += 8) want.push_back(s);
    EXPECT_EQ(after, want) << "fragment " << f;
  }
}

}  // namespace
}  // namespace gw::fusion
