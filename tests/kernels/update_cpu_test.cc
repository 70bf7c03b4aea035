// kernels/update.h on the host stream against scalar references and exact closed forms.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "kernels/update.h"
#include "tests/kernels/kernels_test_util.h"
#include "tests/kernels/sparse_test_inputs.h"

namespace gw::kernels {
namespace {

using test_inputs::Dist;
using test_inputs::make_values;
using test_util::same_bits;

const Stream kHost = Stream::host();

TEST(UpdateCpu, MomentumAccumulateExactValues) {
  // Integer-valued floats: every result is exact. m = 0.5.
  std::vector<float> g = {1, -2, 4}, u = {2, 4, -8}, v = {10, 10, 10};
  momentum_accumulate(g.data(), u.data(), v.data(), 3, 0.5f, false, kHost);
  EXPECT_EQ(u, (std::vector<float>{2, 0, 0}));  // 0.5 u + g
  EXPECT_EQ(v, (std::vector<float>{12, 10, 10}));
  std::vector<float> u2 = {2, 4, -8}, v2 = {10, 10, 10};
  momentum_accumulate(g.data(), u2.data(), v2.data(), 3, 0.5f, true, kHost);
  EXPECT_EQ(u2, (std::vector<float>{2, 0, 0}));
  EXPECT_EQ(v2, (std::vector<float>{12, 8, 14}));  // v + g + 0.5 u_new
}

TEST(UpdateCpu, MomentumMatchesScalarReference) {
  for (std::size_t n : test_inputs::kSizes) {
    for (bool nesterov : {false, true}) {
      const std::vector<float> g = make_values(Dist::kNormal, n, 1);
      std::vector<float> u = make_values(Dist::kWideRange, n, 2),
                         v = make_values(Dist::kNormal, n, 3);
      std::vector<float> ref_u = u, ref_v = v, ref_out(n), u2 = u, out(n);
      const float m = 0.9f;
      for (std::size_t i = 0; i < n; ++i) {
        const float product = m * ref_u[i];
        const float ui = product + g[i];
        ref_u[i] = ui;
        const float mu = m * ui;
        const float add = nesterov ? g[i] + mu : ui;
        ref_v[i] = ref_v[i] + add;
        ref_out[i] = add;
      }
      momentum_accumulate(g.data(), u.data(), v.data(), n, m, nesterov, kHost);
      EXPECT_TRUE(same_bits(ref_u, u));
      EXPECT_TRUE(same_bits(ref_v, v));
      momentum_to(g.data(), u2.data(), out.data(), n, m, nesterov, kHost);
      EXPECT_TRUE(same_bits(ref_u, u2));
      EXPECT_TRUE(same_bits(ref_out, out));
      // out may alias g.
      std::vector<float> g2 = g, u3 = make_values(Dist::kWideRange, n, 2);
      momentum_to(g2.data(), u3.data(), g2.data(), n, m, nesterov, kHost);
      EXPECT_TRUE(same_bits(ref_out, g2));
    }
  }
}

TEST(UpdateCpu, ClipByNormScalesOnlyAboveTheLimit) {
  std::vector<float> g = {3, 4};
  EXPECT_EQ(clip_by_norm(g.data(), 2, 5.0, kHost), 5.0);
  EXPECT_EQ(g, (std::vector<float>{3, 4}));  // norm == limit: untouched
  EXPECT_EQ(clip_by_norm(g.data(), 2, 1.0, kHost), 5.0);
  EXPECT_EQ(g, (std::vector<float>{3 * 0.2f, 4 * 0.2f}));
  std::vector<float> empty;
  EXPECT_EQ(clip_by_norm(empty.data(), 0, 1.0, kHost), 0.0);
}

TEST(UpdateCpu, LocalSgdAveragingExactValues) {
  const std::vector<float> w = {5, -1, 2}, a = {1, 1, 1};
  std::vector<float> d(3);
  subtract(w.data(), a.data(), d.data(), 3, kHost);
  EXPECT_EQ(d, (std::vector<float>{4, -2, 1}));
  std::vector<float> w2 = w, a2 = a;
  const std::vector<float> avg = {0.5f, 0.25f, -1};
  add_to_anchor(avg.data(), w2.data(), a2.data(), 3, kHost);
  EXPECT_EQ(w2, (std::vector<float>{1.5f, 1.25f, 0}));
  EXPECT_EQ(a2, w2);
  std::vector<float> s(3);
  scale_to(w.data(), 0.25f, s.data(), 3, kHost);
  EXPECT_EQ(s, (std::vector<float>{1.25f, -0.25f, 0.5f}));
}

TEST(UpdateCpu, OuterStepExactValues) {
  // Integer and power-of-two figures: every result is exact. Anchor 4, mean 3: d = 1.
  const std::vector<float> sum = {6}, anchor = {4};
  auto run = [&](OuterRule rule, float lr, float mu, float u0, bool delta) {
    std::vector<float> w = {0}, a = anchor, u = {u0};
    const std::vector<float> x = delta ? std::vector<float>{-2} : sum;  // mean - anchor, x 2 ranks
    outer_step(x.data(), 0.5f, delta, w.data(), a.data(), u.data(), 1, {rule, lr, mu}, kHost);
    EXPECT_EQ(a, w);
    return std::vector<float>{w[0], u[0]};
  };
  for (bool delta : {false, true}) {
    // nesterov, mu 0.5, u0 2: u = 0.5 * 2 + 1 = 2; s = 1 + 0.5 * 2 = 2; w = 3 + (1 - 0.5 * 2) = 3.
    EXPECT_EQ(run(OuterRule::kNesterov, 0.5f, 0.5f, 2, delta), (std::vector<float>{3, 2}));
    // heavy ball: s = u = 2; w = 3 + (1 - 2 * 2) = 0.
    EXPECT_EQ(run(OuterRule::kHeavyBall, 2, 0.5f, 2, delta), (std::vector<float>{0, 2}));
    // average: s = d = 1, u untouched; w = 3 + (1 - 0.25) = 3.75.
    EXPECT_EQ(run(OuterRule::kAverage, 0.25f, 0.5f, 7, delta), (std::vector<float>{3.75f, 7}));
  }
}

TEST(UpdateCpu, OuterStepAtLrOneWithoutMomentumIsLocalSgdAveraging) {
  for (std::size_t n : test_inputs::kSizes) {
    const std::vector<float> sum = make_values(Dist::kWideRange, n, 11),
                             anchor = make_values(Dist::kNormal, n, 12),
                             delta = make_values(Dist::kNormal, n, 13);
    std::vector<float> fp32(n), fp16_w(n), fp16_a = anchor;
    scale_to(sum.data(), 0.25f, fp32.data(), n, kHost);
    add_to_anchor(delta.data(), fp16_w.data(), fp16_a.data(), n, kHost);
    for (OuterRule rule : {OuterRule::kNesterov, OuterRule::kHeavyBall, OuterRule::kAverage}) {
      std::vector<float> w(n), a = anchor, u = make_values(Dist::kNormal, n, 14);
      outer_step(sum.data(), 0.25f, false, w.data(), a.data(), u.data(), n, {rule, 1.0f, 0.0f},
                 kHost);
      ASSERT_TRUE(same_bits(w, fp32)) << n;
      ASSERT_TRUE(same_bits(a, fp32)) << n;
      std::vector<float> w2(n), a2 = anchor;
      outer_step(delta.data(), 1.0f, true, w2.data(), a2.data(), u.data(), n, {rule, 1.0f, 0.0f},
                 kHost);
      ASSERT_TRUE(same_bits(w2, fp16_w)) << n;
    }
  }
}

TEST(UpdateCpu, ScaleToFp16MatchesReference) {
  for (std::size_t n : test_inputs::kSizes) {
    const std::vector<float> in = test_util::random_cast_inputs(n, 4);
    std::vector<Half> out(n);
    scale_to_fp16(in.data(), 0.5f, out.data(), n, kHost);
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint16_t expected = test_util::reference_fp32_to_fp16(in[i] * 0.5f);
      const bool ok = test_util::is_fp16_nan(expected) ? test_util::is_fp16_nan(out[i].bits)
                                                       : out[i].bits == expected;
      mismatches += !ok;
    }
    EXPECT_EQ(mismatches, 0u) << "n " << n;
  }
}

}  // namespace
}  // namespace gw::kernels
