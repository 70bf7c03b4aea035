#include "compressors/dgc_compressor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <sstream>

#include "compressor_test_util.h"

namespace gw::compressors {
namespace {

using testing::combine;
using testing::encode_copy;
using testing::make_bucket;
using testing::normal_values;
using testing::unpack;

DgcOptions dgc(std::vector<double> sparsity, double momentum = 0.9, bool nesterov = false) {
  DgcOptions o;
  o.sparsify.sparsity = std::move(sparsity);
  o.sparsify.min_numel = 100;
  o.sparsify.min_k = 0;  // the k rule without its floor, on the pairs wire the counts assume
  o.sparsify.wire = SparseWire::kPairs;
  o.sparsify.algo = SparsifyOptions::Algo::kAllgather;  // what the simulated exchange does
  o.momentum = momentum;
  o.nesterov = nesterov;
  return o;
}

TEST(DgcCompressor, MomentumCorrectionErrorFeedbackAndMasking) {
  // For every element of every step: u' = m u + g; v + u' == sent + v'; and where something was
  // sent, u' was zeroed (momentum factor masking) and v' is zero.
  const std::vector<std::size_t> numels = {4000, 30};
  std::vector<float> storage;
  const BucketView bucket = make_bucket(storage, numels);
  DgcCompressor c(numels, dgc({0.99}));
  const float m = 0.9f;
  std::vector<float> u(4000, 0.0f), v(4000, 0.0f), u_small(30, 0.0f);
  for (std::int64_t step = 0; step < 8; ++step) {
    const auto g = normal_values(bucket.numel, 7 + step);
    std::copy(g.begin(), g.end(), storage.begin());
    c.begin_step(step);
    const auto e = encode_copy(c, bucket, 4);
    ASSERT_EQ(e.plan.sparse, (std::vector<std::size_t>{0}));
    const auto sent = unpack(e, bucket)[0];
    std::size_t sent_count = 0;
    for (std::size_t i = 0; i < 4000; ++i) {
      const float un = m * u[i] + g[i];
      const float acc = v[i] + un;
      ASSERT_EQ(sent[i] + c.accumulator(0)[i], acc) << step << " " << i;
      if (sent[i] != 0.0f) {
        ++sent_count;
        ASSERT_EQ(c.momentum(0)[i], 0.0f);
        ASSERT_EQ(c.accumulator(0)[i], 0.0f);
      } else {
        ASSERT_EQ(c.momentum(0)[i], un);
      }
      u[i] = c.momentum(0)[i];
      v[i] = c.accumulator(0)[i];
    }
    EXPECT_GE(sent_count, 38u);  // k = 40, within the selection tolerance
    EXPECT_LE(sent_count, 40u);
    // The small tensor goes dense with ordinary momentum, never masked.
    for (std::size_t i = 0; i < 30; ++i) {
      u_small[i] = m * u_small[i] + g[4000 + i];
      ASSERT_EQ(e.dense[i], u_small[i]);
      ASSERT_EQ(c.momentum(1)[i], u_small[i]);
    }
  }
}

TEST(DgcCompressor, AFallbackAfterSparseStepsSendsTheWholeAccumulator) {
  // Step 0 sparsifies at 0.99 and leaves most of v behind; step 1 at 0.5 falls back to dense
  // (4 ranks) and must send v + c whole, unmasked, leaving v at zero.
  std::vector<float> storage;
  const BucketView bucket = make_bucket(storage, {4000});
  DgcOptions o = dgc({0.99, 0.5});
  o.sparsify.rampup_steps = 2;
  DgcCompressor c({4000}, o);
  const auto g0 = normal_values(4000, 1), g1 = normal_values(4000, 2);
  std::copy(g0.begin(), g0.end(), storage.begin());
  c.begin_step(0);
  ASSERT_EQ(encode_copy(c, bucket, 4).plan.sparse.size(), 1u);
  const std::vector<float> u0 = c.momentum(0), v0 = c.accumulator(0);
  std::copy(g1.begin(), g1.end(), storage.begin());
  c.begin_step(1);
  const auto e = encode_copy(c, bucket, 4);
  ASSERT_TRUE(e.plan.dense_fallback);
  std::size_t kept = 0;
  for (std::size_t i = 0; i < 4000; ++i) {
    const float u1 = 0.9f * u0[i] + g1[i];
    kept += v0[i] != 0.0f;
    ASSERT_EQ(c.momentum(0)[i], u1) << i;
    ASSERT_EQ(e.dense[i], u1 + v0[i]) << i;
    ASSERT_EQ(c.accumulator(0)[i], 0.0f) << i;
  }
  EXPECT_GT(kept, 3900u);  // the residual really was there
}

TEST(DgcCompressor, WithoutMaskingMomentumSurvivesSending) {
  std::vector<float> storage;
  const BucketView bucket = make_bucket(storage, {1000});
  DgcOptions o = dgc({0.9});
  o.momentum_masking = false;
  DgcCompressor c({1000}, o);
  for (std::size_t i = 0; i < 1000; ++i) storage[i] = static_cast<float>(i % 17) - 8.0f;
  c.begin_step(0);
  encode_copy(c, bucket, 4);
  for (std::size_t i = 0; i < 1000; ++i) {
    EXPECT_EQ(c.momentum(0)[i], static_cast<float>(i % 17) - 8.0f);
  }
}

// Simulates `ranks` workers with DGC and the same workers with dense momentum SGD (PyTorch form:
// buf = m buf + avg g; d = buf, or avg g + m buf with Nesterov) and returns the largest relative
// difference of the weights after `steps` steps of w -= lr * update.
double dgc_vs_dense_momentum(bool nesterov, bool fallback, int ranks, int steps) {
  const std::vector<std::size_t> numels = {2000, 64};
  const float lr = 0.1f, m = 0.9f;
  std::vector<std::vector<float>> storage(static_cast<std::size_t>(ranks));
  std::vector<BucketView> buckets;
  std::vector<std::unique_ptr<DgcCompressor>> dgcs;
  for (int r = 0; r < ranks; ++r) {
    buckets.push_back(make_bucket(storage[static_cast<std::size_t>(r)], numels));
    DgcOptions o = dgc({0.0}, m, nesterov);
    o.momentum_masking = false;
    o.sparsify.dense_fallback = fallback;
    dgcs.push_back(std::make_unique<DgcCompressor>(numels, o));
  }
  const std::size_t n = buckets[0].numel;
  std::vector<float> w_dgc(n, 1.0f), w_ref(n, 1.0f), buf(n, 0.0f);
  for (int step = 0; step < steps; ++step) {
    std::vector<float> avg(n, 0.0f);
    std::vector<testing::Encoded> sent;
    for (int r = 0; r < ranks; ++r) {
      // A gradient that depends on the weights, so differences would compound.
      auto g =
          normal_values(n, 1000 * static_cast<std::uint64_t>(step) + static_cast<std::uint64_t>(r));
      for (std::size_t i = 0; i < n; ++i) g[i] += 0.5f * w_dgc[i];
      std::copy(g.begin(), g.end(), storage[static_cast<std::size_t>(r)].begin());
      for (std::size_t i = 0; i < n; ++i) {
        avg[i] += (g[i] - 0.5f * w_dgc[i] + 0.5f * w_ref[i]) / static_cast<float>(ranks);
      }
      dgcs[static_cast<std::size_t>(r)]->begin_step(step);
      sent.push_back(encode_copy(*dgcs[static_cast<std::size_t>(r)],
                                 buckets[static_cast<std::size_t>(r)], ranks));
      EXPECT_EQ(sent.back().plan.dense_fallback, fallback);
    }
    combine(sent, buckets[0]);
    for (std::size_t i = 0; i < n; ++i) {
      w_dgc[i] -= lr * buckets[0].data[i] / static_cast<float>(ranks);
      buf[i] = m * buf[i] + avg[i];
      w_ref[i] -= lr * (nesterov ? avg[i] + m * buf[i] : buf[i]);
    }
  }
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < n; ++i) {
    worst = std::max(worst, static_cast<double>(std::fabs(w_dgc[i] - w_ref[i])));
    scale = std::max(scale, static_cast<double>(std::fabs(w_ref[i])));
  }
  return worst / scale;
}

TEST(DgcCompressor, AtSparsityZeroWithoutMaskingEqualsDenseMomentumSgd) {
  for (bool nesterov : {false, true}) {
    for (bool fallback : {false, true}) {  // the sparse path (forced) and the dense fallback
      const double diff = dgc_vs_dense_momentum(nesterov, fallback, 4, 50);
      EXPECT_LT(diff, 1e-5) << "nesterov " << nesterov << " fallback " << fallback;
    }
  }
}

TEST(DgcCompressor, MaskingChangesTheResultAtSparsityZero) {
  // The same comparison must fail with masking on (it zeroes all momentum): the test above can
  // tell momentum from no momentum.
  const std::vector<std::size_t> numels = {2000};
  std::vector<float> storage;
  const BucketView bucket = make_bucket(storage, numels);
  DgcOptions o = dgc({0.0});
  o.sparsify.dense_fallback = false;
  DgcCompressor c(numels, o);
  std::fill(storage.begin(), storage.end(), 1.0f);
  c.begin_step(0);
  encode_copy(c, bucket, 4);
  std::fill(storage.begin(), storage.end(), 1.0f);
  c.begin_step(1);
  const auto sent = unpack(encode_copy(c, bucket, 4), bucket)[0];
  EXPECT_EQ(sent[0], 1.0f);  // with momentum kept it would be 1.9
}

TEST(DgcCompressor, WarmupStepsAreOrdinaryMomentum) {
  std::vector<float> storage;
  const BucketView bucket = make_bucket(storage, {1000});
  DgcOptions o = dgc({0.99});
  o.sparsify.rampup_begin_step = 3;
  DgcCompressor c({1000}, o);
  std::vector<float> u(1000, 0.0f);
  for (std::int64_t step = 0; step < 3; ++step) {
    const auto g = normal_values(1000, 50 + step);
    std::copy(g.begin(), g.end(), storage.begin());
    c.begin_step(step);
    const auto e = encode_copy(c, bucket, 4);
    ASSERT_TRUE(e.plan.sparse.empty());
    ASSERT_FALSE(e.plan.dense_fallback);
    for (std::size_t i = 0; i < 1000; ++i) {
      u[i] = 0.9f * u[i] + g[i];
      ASSERT_EQ(e.dense[i], u[i]);
    }
  }
  c.begin_step(3);
  EXPECT_EQ(c.plan(bucket, 4).sparse.size(), 1u);
}

TEST(DgcCompressor, LocalGradientClippingBoundsTheNormBeforeAccumulation) {
  std::vector<float> storage;
  const BucketView bucket = make_bucket(storage, {1000});
  DgcOptions o = dgc({0.99}, 0.0);
  o.clip_norm = 2.0;
  DgcCompressor c({1000}, o);
  std::fill(storage.begin(), storage.end(), 1.0f);  // norm sqrt(1000)
  c.begin_step(0);
  const auto sent = unpack(encode_copy(c, bucket, 4), bucket)[0];
  // Clipped to 2 / sqrt(4) = 1: every element becomes 1 / sqrt(1000).
  double total = 0;
  for (std::size_t i = 0; i < 1000; ++i) total += sent[i] + c.accumulator(0)[i];
  EXPECT_NEAR(total, 1000.0 / std::sqrt(1000.0), 1e-3);
  EXPECT_NEAR(c.accumulator(0)[999] + sent[999], 1.0 / std::sqrt(1000.0), 1e-6);
  // A small gradient is left alone.
  DgcCompressor d({1000}, o);
  std::fill(storage.begin(), storage.end(), 0.001f);
  d.begin_step(0);
  const auto e = encode_copy(d, bucket, 4);
  const auto s = unpack(e, bucket)[0];
  EXPECT_FLOAT_EQ(s[0] + d.accumulator(0)[0], 0.001f);
}

TEST(DgcCompressor, SaveThenLoadContinuesBitIdentically) {
  const std::vector<std::size_t> numels = {5000, 20, 3000};
  std::vector<float> sa, sb;
  const BucketView ba = make_bucket(sa, numels), bb = make_bucket(sb, numels);
  DgcOptions o = dgc({0.9, 0.99}, 0.9, true);
  o.sparsify.rampup_begin_step = 1;
  o.sparsify.rampup_steps = 4;
  o.clip_norm = 50.0;
  DgcCompressor a(numels, o);
  for (std::int64_t step = 0; step < 3; ++step) {
    const auto g = normal_values(ba.numel, step);
    std::copy(g.begin(), g.end(), sa.begin());
    a.begin_step(step);
    encode_copy(a, ba, 4);
  }
  std::stringstream state;
  a.save_state(state);
  DgcCompressor b(numels, o);
  b.load_state(state);
  for (std::int64_t step = 3; step < 9; ++step) {
    const auto g = normal_values(ba.numel, step);
    std::copy(g.begin(), g.end(), sa.begin());
    std::copy(g.begin(), g.end(), sb.begin());
    a.begin_step(step);
    b.begin_step(step);
    const auto ea = encode_copy(a, ba, 4), eb = encode_copy(b, bb, 4);
    ASSERT_EQ(ea.words, eb.words) << "step " << step;
    ASSERT_EQ(ea.dense, eb.dense) << "step " << step;
  }
  for (std::size_t p = 0; p < numels.size(); ++p) {
    EXPECT_EQ(a.momentum(p), b.momentum(p));
    EXPECT_EQ(a.accumulator(p), b.accumulator(p));
  }
  // A topk or differently shaped state is refused.
  std::stringstream again;
  a.save_state(again);
  DgcCompressor other({5000, 20, 3001}, o);
  EXPECT_THROW(other.load_state(again), std::runtime_error);
}

TEST(DgcCompressor, RejectsBadOptions) {
  EXPECT_THROW(DgcCompressor({10}, dgc({0.9}, 1.0)), std::invalid_argument);
  DgcOptions o = dgc({0.9});
  o.clip_norm = -1;
  EXPECT_THROW(DgcCompressor({10}, o), std::invalid_argument);
  o = dgc({0.9});
  o.sparsify.sample_ratio = 0;
  EXPECT_THROW(DgcCompressor({10}, o), std::invalid_argument);
}

}  // namespace
}  // namespace gw::compressors
