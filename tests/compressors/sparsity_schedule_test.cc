#include "compressors/sparsity_schedule.h"

#include <gtest/gtest.h>

namespace gw::compressors {
namespace {

TEST(SparsitySchedule, WarmupListMovesAtTheRightSteps) {
  // 5 values over 100 steps from step 10: 20 steps each, the last from 110 on.
  const std::vector<double> list = {0.75, 0.9375, 0.984375, 0.996, 0.999};
  SparsitySchedule s(list, 10, 100);
  EXPECT_FALSE(s.compressing(0));
  EXPECT_FALSE(s.compressing(9));
  EXPECT_TRUE(s.compressing(10));
  EXPECT_EQ(s.warmup_end_step(), 110);
  for (std::int64_t step = 10; step < 200; ++step) {
    const std::size_t expected = step >= 110 ? 4 : static_cast<std::size_t>((step - 10) / 20);
    ASSERT_EQ(s.stage(step), expected) << "step " << step;
    ASSERT_EQ(s.sparsity(step), list[expected]) << "step " << step;
  }
}

TEST(SparsitySchedule, UnevenSpreadUsesFloorBoundaries) {
  // 5 values over 7 steps from 0: value i starts at floor(i * 7 / 5) = 0, 1, 2, 4, 5.
  SparsitySchedule s({0.1, 0.2, 0.3, 0.4, 0.5}, 0, 7);
  const std::size_t expected[] = {0, 1, 2, 2, 3, 4, 4, 4, 4};
  for (std::int64_t step = 0; step < 9; ++step) EXPECT_EQ(s.stage(step), expected[step]) << step;
}

TEST(SparsitySchedule, SingleValueHoldsFromBeginStep) {
  SparsitySchedule s({0.999}, 3, 0);
  EXPECT_FALSE(s.compressing(2));
  EXPECT_TRUE(s.compressing(3));
  EXPECT_EQ(s.sparsity(1000000), 0.999);
  EXPECT_EQ(s.warmup_end_step(), 3);
}

TEST(SparsitySchedule, RejectsBadSchedules) {
  EXPECT_THROW(SparsitySchedule({}, 0, 0), std::invalid_argument);
  EXPECT_THROW(SparsitySchedule({1.0}, 0, 0), std::invalid_argument);
  EXPECT_THROW(SparsitySchedule({-0.1}, 0, 0), std::invalid_argument);
  EXPECT_THROW(SparsitySchedule({0.5, 0.9}, 0, 1), std::invalid_argument);
  EXPECT_THROW(SparsitySchedule({0.5}, -1, 0), std::invalid_argument);
  EXPECT_NO_THROW(SparsitySchedule({0.5, 0.9}, 0, 2));
}

TEST(SparseCount, IsCeilOfTheKeptFraction) {
  EXPECT_EQ(sparse_count(802816, 0.999), 803u);  // 802.816 -> 803
  EXPECT_EQ(sparse_count(524288, 0.999), 525u);  // 524.288 -> 525
  EXPECT_EQ(sparse_count(1000, 0.999), 1u);      // exactly 1, despite binary 1 - 0.999
  EXPECT_EQ(sparse_count(1000000, 0.999), 1000u);
  EXPECT_EQ(sparse_count(16, 0.75), 4u);
  EXPECT_EQ(sparse_count(10, 0.0), 10u);
  EXPECT_EQ(sparse_count(10, 0.999999), 1u);  // never nothing
  EXPECT_EQ(sparse_count(0, 0.5), 0u);
}

}  // namespace
}  // namespace gw::compressors
