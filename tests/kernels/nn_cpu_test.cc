// kernels/nn.h on the host stream against values worked out by hand: the formulas themselves, so
// that a mistake made in both the CPU loops and the device algorithms (which
// nn_thrust_omp_test.cc checks only against each other) still fails. Inputs are small integers and
// powers of two wherever the arithmetic allows, so most expected values are exact.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "kernels/nn.h"
#include "tests/kernels/kernels_test_util.h"

namespace gw::kernels {
namespace {

using test_util::float_bits;

const Stream kHost = Stream::host();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST(NnCpu, ReluForwardAndBackward) {
  const std::vector<float> x = {-2.0f, -0.0f, 0.0f, 3.0f, kNaN, 1e-30f};
  std::vector<float> y(x.size());
  relu_forward(x.data(), y.data(), x.size(), kHost);
  EXPECT_EQ(y, (std::vector<float>{0.0f, 0.0f, 0.0f, 3.0f, 0.0f, 1e-30f}));
  EXPECT_EQ(float_bits(y[1]), 0u) << "-0 becomes +0";
  EXPECT_EQ(float_bits(y[4]), 0u) << "NaN becomes +0";
  const std::vector<float> dy = {10.0f, 20.0f, 30.0f, 40.0f, 50.0f, 60.0f};
  std::vector<float> dx(x.size());
  relu_backward(x.data(), dy.data(), dx.data(), x.size(), kHost);
  EXPECT_EQ(dx, (std::vector<float>{0.0f, 0.0f, 0.0f, 40.0f, 0.0f, 60.0f}));
}

TEST(NnCpu, BiasBroadcastAddAndColumnSum) {
  const std::vector<float> bias = {1.0f, -2.0f, 0.5f};
  std::vector<float> y(6, 99.0f);
  broadcast_rows(bias.data(), 2, 3, y.data(), kHost);
  EXPECT_EQ(y, (std::vector<float>{1.0f, -2.0f, 0.5f, 1.0f, -2.0f, 0.5f}));
  const std::vector<float> dy = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};  // [4, 3]
  std::vector<float> db(3, 99.0f);
  bias_grad(dy.data(), 4, 3, db.data(), kHost);
  EXPECT_EQ(db, (std::vector<float>{22.0f, 26.0f, 30.0f}));
  // Row order: 1 + 2^24 - 2^24 is 0 in float (the 1 is lost), not 1.
  const std::vector<float> col = {1.0f, 16777216.0f, -16777216.0f};
  float d = 99.0f;
  bias_grad(col.data(), 3, 1, &d, kHost);
  EXPECT_EQ(d, 0.0f);
  // No rows: zeros.
  bias_grad(dy.data(), 0, 3, db.data(), kHost);
  EXPECT_EQ(db, (std::vector<float>{0.0f, 0.0f, 0.0f}));
}

TEST(NnCpu, SoftmaxCrossEntropyOfKnownRows) {
  // Row 0: equal logits, 4 classes: p = 1/4 each, loss = log 4. Row 1: logits {0, ln 3} shifted
  // by 100 (the max is subtracted first, so no overflow): p = {1/4, 3/4}; label 0: loss = log 4.
  const float ln3 = std::log(3.0f);
  const std::vector<float> z = {5, 5, 5, 5, 100.0f, 100.0f + ln3, -1e30f, -1e30f};
  const std::vector<std::uint8_t> labels = {2, 0};
  std::vector<float> p(8), loss(2);
  softmax_cross_entropy_forward(z.data(), labels.data(), 1, 4, p.data(), loss.data(), kHost);
  EXPECT_EQ(p[0], 0.25f);
  EXPECT_EQ(p[3], 0.25f);
  EXPECT_FLOAT_EQ(loss[0], std::log(4.0f));
  // Row 1 as a [1, 4] row whose last two logits are -1e30: they get probability 0.
  softmax_cross_entropy_forward(z.data() + 4, labels.data() + 1, 1, 4, p.data() + 4,
                                loss.data() + 1, kHost);
  EXPECT_NEAR(p[4], 0.25f, 1e-5f);
  EXPECT_NEAR(p[5], 0.75f, 1e-5f);
  EXPECT_EQ(p[6], 0.0f);
  EXPECT_EQ(p[7], 0.0f);
  EXPECT_NEAR(loss[1], std::log(4.0f), 1e-5f);
  // A one-class row: p = 1, loss = 0.
  const float one = 7.0f;
  const std::uint8_t zero = 0;
  float p1 = 0.0f, l1 = 1.0f;
  softmax_cross_entropy_forward(&one, &zero, 1, 1, &p1, &l1, kHost);
  EXPECT_EQ(p1, 1.0f);
  EXPECT_EQ(l1, 0.0f);
}

TEST(NnCpu, SoftmaxCrossEntropyBackwardIsProbsMinusOneHotTimesScale) {
  const std::vector<float> p = {0.25f, 0.75f, 0.5f, 0.5f};
  const std::vector<std::uint8_t> labels = {1, 0};
  std::vector<float> g(4);
  softmax_cross_entropy_backward(p.data(), labels.data(), 2, 2, 0.5f, g.data(), kHost);
  EXPECT_EQ(g, (std::vector<float>{0.125f, -0.125f, -0.25f, 0.25f}));
}

TEST(NnCpu, ArgmaxFirstOnTiesAndCountCorrect) {
  const std::vector<float> x = {1,    3,    3,  0,   //
                                -1,   -1,   -1, -1,  //
                                kNaN, 5,    6,  7,   //
                                2,    kNaN, 9,  1};
  // Each row's argmax, read through count_correct with that index as the label. A NaN never wins
  // and, first, is never replaced (nothing compares greater than it); later, it is skipped.
  const std::uint8_t argmax[4] = {1, 0, 0, 2};
  for (std::size_t r = 0; r < 4; ++r) {
    EXPECT_EQ(count_correct(x.data() + 4 * r, &argmax[r], 1, 4, kHost), 1u) << "row " << r;
  }
  const std::vector<std::uint8_t> labels = {1, 3, 0, 3};
  EXPECT_EQ(count_correct(x.data(), labels.data(), 4, 4, kHost), 2u);
  EXPECT_EQ(count_correct(x.data(), labels.data(), 0, 4, kHost), 0u);
}

TEST(NnCpu, FirstBadLabel) {
  const std::vector<std::uint8_t> labels = {0, 9, 10, 3, 200};
  EXPECT_EQ(first_bad_label(labels.data(), 5, 10, kHost), 2u);
  EXPECT_EQ(first_bad_label(labels.data(), 2, 10, kHost), 2u) << "none bad: rows";
  EXPECT_EQ(first_bad_label(labels.data(), 5, 201, kHost), 5u);
  EXPECT_EQ(first_bad_label(labels.data(), 0, 1, kHost), 0u);
}

TEST(NnCpu, MaxPoolForwardFirstMaxAndBackwardToIt) {
  // One 3 x 5 plane, kernel 2: outputs 1 x 2; the last row and column are dropped.
  const std::vector<float> x = {1, 4, 4, 0, 9,  //
                                4, 2, 3, 4, 9,  //
                                9, 9, 9, 9, 9};
  std::vector<float> y(2);
  std::vector<std::uint32_t> arg(2);
  max_pool2d_forward(x.data(), 1, 3, 5, 2, y.data(), arg.data(), kHost);
  EXPECT_EQ(y, (std::vector<float>{4.0f, 4.0f}));
  EXPECT_EQ(arg, (std::vector<std::uint32_t>{1, 2})) << "the first 4 in row-major window order";
  const std::vector<float> dy = {-0.0f, 5.0f};
  std::vector<float> dx(15, 99.0f);
  max_pool2d_backward(dy.data(), arg.data(), 1, 3, 5, 2, dx.data(), kHost);
  std::vector<float> expected(15, 0.0f);
  expected[2] = 5.0f;
  EXPECT_EQ(dx, expected);
  EXPECT_EQ(float_bits(dx[1]), 0u) << "0 + -0 is +0, as the layer's zero fill and add";
}

TEST(NnCpu, SgdStepsOfKnownValue) {
  // d = g * gs + wd * w = 2 * 0.5 + 0.5 * 4 = 3.
  const float g = 2.0f;
  float w = 4.0f;
  sgd_update(&w, &g, nullptr, 1, SgdCoefficients{0.5f, 0.5f, 0.9f, 0.5f, false}, kHost);
  EXPECT_EQ(w, 2.5f);  // 4 - 0.5 * 3; momentum ignored without a buffer
  // Momentum 0.5, buf 2: b = 1 + 3 = 4; w = 4 - 0.5 * 4 = 2.
  float w2 = 4.0f, buf = 2.0f;
  sgd_update(&w2, &g, &buf, 1, SgdCoefficients{0.5f, 0.5f, 0.5f, 0.5f, false}, kHost);
  EXPECT_EQ(buf, 4.0f);
  EXPECT_EQ(w2, 2.0f);
  // Nesterov: b = 4 as above; w = 4 - 0.5 * (3 + 0.5 * 4) = 1.5.
  float w3 = 4.0f, buf3 = 2.0f;
  sgd_update(&w3, &g, &buf3, 1, SgdCoefficients{0.5f, 0.5f, 0.5f, 0.5f, true}, kHost);
  EXPECT_EQ(buf3, 4.0f);
  EXPECT_EQ(w3, 1.5f);
}

TEST(NnCpu, AdamStepOfKnownValue) {
  // d = 2 * 1 + 0 = 2; m = 0.5 * 2 + 0.5 * 2 = 2; v = 0.75 * 4 + 0.25 * 4 = 4;
  // w = 10 - 0.5 * (2 / (sqrt(4) / 0.5 + 0)) = 10 - 0.5 * 0.5 = 9.75. (eps 0 is not a valid Adam
  // option, but the primitive does not care, and it keeps the value exact.)
  const float g = 2.0f;
  float w = 10.0f, m = 2.0f, v = 4.0f;
  const AdamCoefficients c{0.5f, 0.5f, 0.75f, 0.25f, 0.0f, 0.5f, 0.5f, 0.0f, 1.0f};
  adam_update(&w, &g, &m, &v, 1, c, kHost);
  EXPECT_EQ(m, 2.0f);
  EXPECT_EQ(v, 4.0f);
  EXPECT_EQ(w, 9.75f);
  // Weight decay and grad_scale: d = 4 * 0.25 + 0.5 * 2 = 2, the same step from w = 2.
  const float g2 = 4.0f;
  float w2 = 2.0f, m2 = 2.0f, v2 = 4.0f;
  const AdamCoefficients c2{0.5f, 0.5f, 0.75f, 0.25f, 0.5f, 0.5f, 0.5f, 0.0f, 0.25f};
  adam_update(&w2, &g2, &m2, &v2, 1, c2, kHost);
  EXPECT_EQ(w2, 1.75f);
}

TEST(NnCpu, GatherRowsAndBytes) {
  const std::vector<float> src = {0, 1, 10, 11, 20, 21};  // [3, 2]
  const std::vector<std::uint8_t> labels = {7, 8, 9};
  const std::vector<std::uint64_t> idx = {2, 0, 2};
  std::vector<float> dst(6);
  std::vector<std::uint8_t> l(3);
  gather_rows(src.data(), 2, idx.data(), 3, dst.data(), kHost);
  gather_bytes(labels.data(), idx.data(), 3, l.data(), kHost);
  EXPECT_EQ(dst, (std::vector<float>{20, 21, 0, 1, 20, 21}));
  EXPECT_EQ(l, (std::vector<std::uint8_t>{9, 7, 9}));
}

}  // namespace
}  // namespace gw::kernels
