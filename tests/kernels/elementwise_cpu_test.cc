// The fp32 primitives on the host stream against straightforward scalar loops.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "kernels/elementwise.h"
#include "tests/kernels/kernels_test_util.h"

namespace gw::kernels {
namespace {

using test_util::kTestSizes;
using test_util::random_floats;
using test_util::same_bits;

class CpuElementwiseTest : public ::testing::TestWithParam<std::size_t> {};

TEST_P(CpuElementwiseTest, ScaleMatchesScalarLoop) {
  const std::size_t n = GetParam();
  const float alpha = -0.3f;
  std::vector<float> x = random_floats(n, 11);
  std::vector<float> expected = x;
  for (float& v : expected) v = v * alpha;

  scale(x.data(), alpha, n, Stream::host());
  EXPECT_TRUE(same_bits(expected, x));
}

TEST_P(CpuElementwiseTest, AxpyMatchesScalarLoop) {
  const std::size_t n = GetParam();
  const float alpha = 0.7f;
  const std::vector<float> x = random_floats(n, 21);
  std::vector<float> y = random_floats(n, 22);
  std::vector<float> expected = y;
  for (std::size_t i = 0; i < n; ++i) expected[i] = expected[i] + alpha * x[i];

  axpy(alpha, x.data(), y.data(), n, Stream::host());
  EXPECT_TRUE(same_bits(expected, y));
}

TEST_P(CpuElementwiseTest, AxpyInPlaceWhenXIsY) {
  const std::size_t n = GetParam();
  const float alpha = 0.25f;
  std::vector<float> y = random_floats(n, 23);
  std::vector<float> expected = y;
  for (float& v : expected) v = v + alpha * v;

  axpy(alpha, y.data(), y.data(), n, Stream::host());
  EXPECT_TRUE(same_bits(expected, y));
}

TEST_P(CpuElementwiseTest, SumOfSquaresMatchesExtendedPrecisionSum) {
  const std::size_t n = GetParam();
  const std::vector<float> x = random_floats(n, 31);
  long double expected = 0.0L;
  for (float v : x) expected += static_cast<long double>(v) * v;

  const double actual = sum_of_squares(x.data(), n, Stream::host());
  if (n == 0) {
    EXPECT_EQ(actual, 0.0);
  } else {
    // Each square is exact in double; only the n additions round (relative 1e-16 each, mostly
    // cancelling), so 1e-13 is far tighter than any fp32 accumulation could meet.
    EXPECT_NEAR(actual, static_cast<double>(expected), 1e-13 * static_cast<double>(expected));
  }
}

TEST_P(CpuElementwiseTest, SumOfSquaresDoesNotOverflowLikeFloat) {
  const std::size_t n = GetParam();
  const float big = 1e30f;  // big^2 overflows float but not double
  const std::vector<float> x(n, big);
  const double expected = static_cast<double>(n) * 1e60;
  EXPECT_NEAR(sum_of_squares(x.data(), n, Stream::host()), expected, 1e-6 * expected);
}

TEST_P(CpuElementwiseTest, AllFiniteAcceptsExtremeFiniteValues) {
  const std::size_t n = GetParam();
  std::vector<float> x = random_floats(n, 41);
  const float extremes[] = {std::numeric_limits<float>::max(), std::numeric_limits<float>::lowest(),
                            std::numeric_limits<float>::denorm_min(), -0.0f};
  for (std::size_t i = 0; i < n; ++i) {
    if (i % 97 == 0) x[i] = extremes[(i / 97) % 4];
  }
  EXPECT_TRUE(all_finite(x.data(), n, Stream::host()));
}

TEST_P(CpuElementwiseTest, AllFiniteFindsOneInfOrNanAnywhere) {
  const std::size_t n = GetParam();
  std::vector<float> x = random_floats(n, 42);
  if (n == 0) {
    EXPECT_TRUE(all_finite(x.data(), n, Stream::host()));
    return;
  }
  const float bad_values[] = {
      std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
      std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
      test_util::bits_float(0x7f800001u)};  // signalling NaN with the lowest payload
  for (const std::size_t position : {std::size_t{0}, n / 2, n - 1}) {
    for (const float bad : bad_values) {
      const float saved = x[position];
      x[position] = bad;
      EXPECT_FALSE(all_finite(x.data(), n, Stream::host()))
          << "value " << bad << " at " << position << " of " << n;
      x[position] = saved;
    }
  }
  EXPECT_TRUE(all_finite(x.data(), n, Stream::host()));
}

TEST_P(CpuElementwiseTest, ScaleAndCheckFiniteScalesEveryElementAndFindsOverflow) {
  const std::size_t n = GetParam();
  const std::vector<float> x = random_floats(n, 43);
  std::vector<float> y = x;
  EXPECT_TRUE(scale_and_check_finite(y.data(), 0.25f, n, Stream::host()));
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(y[i], x[i] * 0.25f) << i;
  if (n == 0) return;
  const float bad_values[] = {std::numeric_limits<float>::infinity(),
                              std::numeric_limits<float>::quiet_NaN(),
                              test_util::bits_float(0x7f800001u)};
  for (const std::size_t position : {std::size_t{0}, n / 2, n - 1}) {
    for (const float bad : bad_values) {
      y = x;
      y[position] = bad;
      EXPECT_FALSE(scale_and_check_finite(y.data(), 0.5f, n, Stream::host()))
          << "value " << bad << " at " << position << " of " << n;
      // The rest is still scaled: the caller may use or discard it, but never half of it.
      const std::size_t other = position == 0 ? n - 1 : 0;
      if (other != position) EXPECT_EQ(y[other], x[other] * 0.5f);
    }
    // A finite value whose product leaves the fp32 range is an overflow too.
    y = x;
    y[position] = std::numeric_limits<float>::max();
    EXPECT_FALSE(scale_and_check_finite(y.data(), 4.0f, n, Stream::host())) << position;
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, CpuElementwiseTest, ::testing::ValuesIn(kTestSizes),
                         test_util::size_name);

TEST(CpuElementwise, EmptyBuffersMayBeNull) {
  scale(nullptr, 2.0f, 0, Stream::host());
  axpy(2.0f, nullptr, nullptr, 0, Stream::host());
  cast_fp32_to_fp16(nullptr, nullptr, 0, Stream::host());
  cast_fp16_to_fp32(nullptr, nullptr, 0, Stream::host());
  EXPECT_EQ(sum_of_squares(nullptr, 0, Stream::host()), 0.0);
  EXPECT_TRUE(all_finite(nullptr, 0, Stream::host()));
  EXPECT_TRUE(scale_and_check_finite(nullptr, 2.0f, 0, Stream::host()));
}

}  // namespace
}  // namespace gw::kernels
