#include "fusion/launch_tracker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>

namespace gw::fusion {
namespace {

// {10, 20, 30, 40} at 280 bytes: bucket 0 = parameters 2, 3; bucket 1 = parameters 0, 1.
BucketPlan two_buckets() { return plan_buckets({10, 20, 30, 40}, 280); }

TEST(LaunchTracker, BackwardOrderReleasesEachBucketWhenItCompletes) {
  LaunchTracker t(two_buckets());
  EXPECT_EQ(t.mark_ready(3), 0u);
  EXPECT_EQ(t.mark_ready(2), 1u);
  EXPECT_EQ(t.released(), 1u);
  EXPECT_EQ(t.mark_ready(1), 0u);
  EXPECT_EQ(t.mark_ready(0), 1u);
  EXPECT_EQ(t.released(), 2u);
  EXPECT_TRUE(t.all_marked());
}

TEST(LaunchTracker, ALaterBucketCompletedFirstWaitsForTheEarlierOnes) {
  LaunchTracker t(two_buckets());
  EXPECT_EQ(t.mark_ready(0), 0u);
  EXPECT_EQ(t.mark_ready(1), 0u);  // bucket 1 is complete, but bucket 0 is not
  EXPECT_EQ(t.released(), 0u);
  EXPECT_EQ(t.mark_ready(2), 0u);
  EXPECT_EQ(t.mark_ready(3), 2u);  // both at once, in order
  EXPECT_EQ(t.released(), 2u);
}

TEST(LaunchTracker, ReleasesTheLongestCompletePrefixForAnyMarkingOrder) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 100; ++trial) {
    std::vector<std::size_t> numels(1 + rng() % 30);
    for (auto& n : numels) n = 1 + rng() % 100;
    const BucketPlan plan = plan_buckets(numels, rng() % 1200);
    std::vector<std::size_t> order(numels.size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    LaunchTracker t(plan);
    std::vector<bool> ready(numels.size(), false);
    std::size_t released = 0;
    for (std::size_t p : order) {
      released += t.mark_ready(p);
      ready[p] = true;
      std::size_t prefix = 0;
      while (prefix < plan.size()) {
        const Bucket& b = plan.buckets[prefix];
        if (!std::all_of(ready.begin() + static_cast<std::ptrdiff_t>(b.begin),
                         ready.begin() + static_cast<std::ptrdiff_t>(b.end),
                         [](bool r) { return r; })) {
          break;
        }
        ++prefix;
      }
      ASSERT_EQ(t.released(), prefix) << "trial " << trial;
      ASSERT_EQ(released, prefix);
    }
    EXPECT_EQ(t.released(), plan.size());
  }
}

TEST(LaunchTracker, MarkAllReleasesTheRestAndResetStartsAStep) {
  LaunchTracker t(two_buckets());
  t.mark_ready(1);
  EXPECT_EQ(t.mark_all(), 2u);
  EXPECT_TRUE(t.all_marked());
  EXPECT_EQ(t.marked(), 4u);
  t.reset();
  EXPECT_TRUE(t.none_marked());
  EXPECT_EQ(t.released(), 0u);
  EXPECT_FALSE(t.is_marked(1));
  EXPECT_EQ(t.mark_ready(3), 0u);
  EXPECT_EQ(t.mark_ready(2), 1u);
}

TEST(LaunchTracker, RejectsDoubleMarksAndUnknownParameters) {
  LaunchTracker t(two_buckets());
  t.mark_ready(2);
  EXPECT_THROW(t.mark_ready(2), std::logic_error);
  EXPECT_THROW(t.mark_ready(4), std::logic_error);
  EXPECT_EQ(t.marked(), 1u);
}

}  // namespace
}  // namespace gw::fusion
