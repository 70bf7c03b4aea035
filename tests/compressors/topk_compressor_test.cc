#include "compressors/topk_compressor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "compressor_test_util.h"
#include "kernels/topk.h"

namespace gw::compressors {
namespace {

using testing::encode_copy;
using testing::make_bucket;
using testing::normal_values;
using testing::unpack;

// The k rule without its floor, on the pairs wire, which these tests' counts are written for, and
// by allgatherv, which the single-process exchange here simulates; the floor, the compact wire and
// the split have their own tests.
SparsifyOptions options(std::vector<double> sparsity, std::size_t min_numel = 100) {
  SparsifyOptions o;
  o.sparsity = std::move(sparsity);
  o.min_numel = min_numel;
  o.min_k = 0;
  o.wire = SparseWire::kPairs;
  o.algo = SparsifyOptions::Algo::kAllgather;
  return o;
}

TEST(TopkCompressor, PlanSplitsBySizeAndKeepsMemoryOrder) {
  std::vector<float> storage;
  const BucketView bucket = make_bucket(storage, {50, 1000, 99, 100});
  TopkCompressor c({50, 1000, 99, 100}, options({0.99}));
  c.begin_step(0);
  const ExchangePlan plan = c.plan(bucket, 4);
  EXPECT_EQ(plan.dense, (std::vector<std::size_t>{0, 2}));
  EXPECT_EQ(plan.sparse, (std::vector<std::size_t>{1, 3}));
  EXPECT_EQ(plan.k, (std::vector<std::size_t>{10, 1}));
  EXPECT_FALSE(plan.dense_fallback);
  EXPECT_EQ(plan.dense_wire, DenseWire::kFloat32);
}

TEST(TopkCompressor, MinKRaisesTheSmallTensorsCountToTheFloorOrTheWholeTensor) {
  // GRADWIRE_DGC_MIN_K: k = max(ceil(numel (1 - s)), min(numel, min_k)), so a bias of 10 sends
  // all of itself and a 5000-element layer at least 64, where 0.999 alone gives them 1 and 5.
  std::vector<float> storage;
  const BucketView bucket = make_bucket(storage, {10, 5000, 200000});
  SparsifyOptions o = options({0.999}, 1);
  o.min_k = 64;
  o.dense_fallback = false;
  TopkCompressor c({10, 5000, 200000}, o);
  EXPECT_EQ(c.plan(bucket, 4).k, (std::vector<std::size_t>{10, 64, 200}));
  o.min_k = 0;
  EXPECT_EQ(TopkCompressor({10, 5000, 200000}, o).plan(bucket, 4).k,
            (std::vector<std::size_t>{1, 5, 200}));
}

TEST(TopkCompressor, FallsBackToDenseWhenTheSparseExchangeMovesMoreBytes) {
  // See Note [When sparse falls back to dense]: sparse when n (T + 2 sum k) < 2 sum N.
  std::vector<float> storage;
  const BucketView bucket = make_bucket(storage, {1600});
  for (const auto& [sparsity, world, fallback] :
       std::vector<std::tuple<double, int, bool>>{{0.75, 4, true},     // 4 (1 + 800) >= 3200
                                                  {0.9375, 4, false},  // 4 (1 + 200) < 3200
                                                  {0.9375, 16, true},  // 16 (1 + 200) >= 3200
                                                  {0.0, 2, true},
                                                  // a tie: 128 (1 + 2 x 12) == 3200 goes dense
                                                  {0.9925, 128, true},
                                                  {0.5, 1, false}}) {
    TopkCompressor c({1600}, options({sparsity}));
    const ExchangePlan plan = c.plan(bucket, world);
    EXPECT_EQ(plan.dense_fallback, fallback) << sparsity << " at " << world;
    EXPECT_EQ(plan.sparse.empty(), fallback);
    EXPECT_EQ(plan.dense.size(), fallback ? 1u : 0u);
  }
  SparsifyOptions forced = options({0.0});
  forced.dense_fallback = false;  // the test-only switch
  TopkCompressor c({1600}, forced);
  EXPECT_EQ(c.plan(bucket, 4).k, (std::vector<std::size_t>{1600}));
}

TEST(TopkCompressor, FallsBackPerTensorSoBucketsDoNotChangeThePlan) {
  // At 4 ranks on the pairs wire, 0.9 with a floor of 10: the 10-element tensor sends all 10,
  // 4 (1 + 2 x 10) >= 2 x 10, and goes dense; the 1000-element one, 4 (1 + 2 x 100) < 2 x 1000,
  // stays sparse, in one bucket as in two. Only a bucket with nothing left sparse is a fallback.
  SparsifyOptions o = options({0.9}, 1);
  o.min_k = 10;
  std::vector<float> storage;
  const BucketView both = make_bucket(storage, {10, 1000});
  const ExchangePlan plan = TopkCompressor({10, 1000}, o).plan(both, 4);
  EXPECT_EQ(plan.dense, (std::vector<std::size_t>{0}));
  EXPECT_EQ(plan.sparse, (std::vector<std::size_t>{1}));
  EXPECT_EQ(plan.k, (std::vector<std::size_t>{100}));
  EXPECT_FALSE(plan.dense_fallback);
  std::vector<float> small_storage;
  const BucketView small = make_bucket(small_storage, {10});
  const ExchangePlan small_plan = TopkCompressor({10}, o).plan(small, 4);
  EXPECT_EQ(small_plan.dense, (std::vector<std::size_t>{0}));
  EXPECT_TRUE(small_plan.dense_fallback);
}

// sent + residual == accumulated, bit for bit, for every element of every parameter, through
// the warm-up's dense steps, several sparsities and a fallback that follows sparse steps (so the
// residual it must send whole is not zero). On the pairs wire a sent element leaves nothing
// behind; on the compact wire it leaves what binary16 could not carry (at most 2^-11 of it). With
// low-bit values (Note [Low-bit wire values]) the residual is accumulated - sent, rounded once, so
// the sum is within an ulp of sent, and what is kept is at most the scale over 2^b, the scale being
// at most the tensor's largest |accumulated|; there the plan finds sparsity 0.5 cheaper sparse than
// dense (at 4 ranks: 4 x (2 + 0.5 N x 20 / 32) < 2N words), so it never falls back.
void expect_mass_conserved(SparseWire wire) {
  const bool low_bit = is_compact(wire) && wire_value_bits(wire) < 16;
  const std::vector<std::size_t> numels = {40, 3000, 7, 5000};
  std::vector<float> storage;
  const BucketView bucket = make_bucket(storage, numels);
  SparsifyOptions o = options({0.9, 0.5, 0.99}, 100);
  o.rampup_begin_step = 2;
  o.rampup_steps = 6;
  o.wire = wire;
  TopkCompressor c(numels, o);
  std::vector<std::vector<float>> residual(numels.size());
  for (std::size_t p = 0; p < numels.size(); ++p) residual[p].assign(numels[p], 0.0f);
  int sparse_steps = 0, fallback_steps = 0, dense_steps = 0;
  for (std::int64_t step = 0; step < 14; ++step) {
    const std::vector<float> g = normal_values(bucket.numel, 100 + step);
    std::copy(g.begin(), g.end(), storage.begin());
    c.begin_step(step);
    const testing::Encoded e = encode_copy(c, bucket, 4);
    EXPECT_EQ(e.plan.sparse_wire, wire);
    sparse_steps += !e.plan.sparse.empty();
    fallback_steps += e.plan.dense_fallback;
    dense_steps += e.plan.sparse.empty() && !e.plan.dense_fallback;
    const auto sent_sparse = unpack(e, bucket);
    std::size_t dense_at = 0;
    for (std::size_t pos = 0; pos < numels.size(); ++pos) {
      const TensorSlot& t = bucket.tensors[pos];
      std::vector<float> accumulated(t.numel);
      float largest = 0.0f;
      for (std::size_t i = 0; i < t.numel; ++i) {
        accumulated[i] = residual[pos][i] + g[t.offset + i];
        largest = std::max(largest, std::fabs(accumulated[i]));
      }
      const auto sparse_it = std::find(e.plan.sparse.begin(), e.plan.sparse.end(), pos);
      const std::vector<float>& now = c.residual(pos);
      for (std::size_t i = 0; i < t.numel; ++i) {
        float sent = 0;
        if (sparse_it != e.plan.sparse.end()) {
          sent = sent_sparse[static_cast<std::size_t>(sparse_it - e.plan.sparse.begin())][i];
        } else {
          sent = e.dense[dense_at + i];
        }
        const float left = now.empty() ? 0.0f : now[i];
        if (low_bit && sparse_it != e.plan.sparse.end() && sent != 0.0f) {
          ASSERT_NEAR(sent + left, accumulated[i],
                      std::ldexp(std::max(std::fabs(sent), std::fabs(accumulated[i])), -23))
              << "step " << step << " tensor " << pos << " i " << i;
          // At most half a cell, s / 2^b, give or take the roundings of v / s and of the level.
          ASSERT_LE(std::fabs(left), std::ldexp(largest, -static_cast<int>(wire_value_bits(wire))) *
                                         (1.0f + std::ldexp(1.0f, -20)))
              << "more kept than the code drops";
          continue;
        }
        ASSERT_EQ(sent + left, accumulated[i])
            << "step " << step << " tensor " << pos << " i " << i;
        if (wire == SparseWire::kPairs || sent == 0.0f) {
          ASSERT_TRUE(sent == 0.0f || left == 0.0f) << "an element both sent and kept";
        } else {
          ASSERT_LE(std::fabs(left), std::ldexp(std::fabs(accumulated[i]), -11))
              << "more kept than binary16 rounding drops";
        }
      }
      if (sparse_it != e.plan.sparse.end()) {
        const std::size_t k = e.plan.k[static_cast<std::size_t>(sparse_it - e.plan.sparse.begin())];
        std::size_t nonzero = 0;
        for (float x : sent_sparse[static_cast<std::size_t>(sparse_it - e.plan.sparse.begin())]) {
          nonzero += x != 0.0f;
        }
        EXPECT_GE(nonzero, kernels::topk_min_count(k));
        EXPECT_LE(nonzero, k);
      } else {
        dense_at += t.numel;
      }
      residual[pos] = now.empty() ? std::vector<float>(t.numel, 0.0f) : now;
    }
  }
  EXPECT_EQ(dense_steps, 2);                   // before the begin step
  EXPECT_EQ(fallback_steps, low_bit ? 0 : 2);  // sparsity 0.5 at 4 ranks, steps 4 and 5
  EXPECT_EQ(sparse_steps, low_bit ? 12 : 10);
}

TEST(TopkCompressor, ConservesMassEveryParameterEveryStep) {
  expect_mass_conserved(SparseWire::kPairs);
}

TEST(TopkCompressor, ConservesMassOnTheCompactWireWithTheFp16ErrorKept) {
  expect_mass_conserved(SparseWire::kCompact);
}

TEST(TopkCompressor, ConservesMassWithLowBitValuesTheirErrorKept) {
  expect_mass_conserved(SparseWire::kCompact4);
  expect_mass_conserved(SparseWire::kCompact2);
}

TEST(TopkCompressor, SendsTheLargestAccumulatedValues) {
  std::vector<float> storage;
  const BucketView bucket = make_bucket(storage, {1000});
  TopkCompressor c({1000}, options({0.99}));
  // Step 0: the ten largest of 0..999 go out. Step 1: zero gradient, so the next ten of the
  // residual go out.
  for (std::size_t i = 0; i < 1000; ++i) storage[i] = static_cast<float>(i);
  c.begin_step(0);
  auto e = encode_copy(c, bucket, 4);
  auto sent = unpack(e, bucket)[0];
  for (std::size_t i = 0; i < 1000; ++i) EXPECT_EQ(sent[i], i >= 990 ? float(i) : 0.0f) << i;
  std::fill(storage.begin(), storage.end(), 0.0f);
  c.begin_step(1);
  e = encode_copy(c, bucket, 4);
  sent = unpack(e, bucket)[0];
  for (std::size_t i = 0; i < 1000; ++i) {
    EXPECT_EQ(sent[i], i >= 980 && i < 990 ? float(i) : 0.0f) << i;
  }
}

TEST(TopkCompressor, SaveThenLoadContinuesBitIdentically) {
  const std::vector<std::size_t> numels = {3000, 50, 2000};
  std::vector<float> sa, sb;
  const BucketView a_bucket = make_bucket(sa, numels), b_bucket = make_bucket(sb, numels);
  TopkCompressor a(numels, options({0.95}));
  for (std::int64_t step = 0; step < 5; ++step) {
    const auto g = normal_values(a_bucket.numel, step);
    std::copy(g.begin(), g.end(), sa.begin());
    a.begin_step(step);
    encode_copy(a, a_bucket, 2);
  }
  std::stringstream state;
  a.save_state(state);
  TopkCompressor b(numels, options({0.95}));
  b.load_state(state);
  EXPECT_EQ(b.step(), 4);
  for (std::int64_t step = 5; step < 10; ++step) {
    const auto g = normal_values(a_bucket.numel, step);
    std::copy(g.begin(), g.end(), sa.begin());
    std::copy(g.begin(), g.end(), sb.begin());
    a.begin_step(step);
    b.begin_step(step);
    const auto ea = encode_copy(a, a_bucket, 2), eb = encode_copy(b, b_bucket, 2);
    ASSERT_EQ(ea.words, eb.words) << "step " << step;
    ASSERT_EQ(ea.dense, eb.dense) << "step " << step;
  }
  for (std::size_t p = 0; p < numels.size(); ++p) EXPECT_EQ(a.residual(p), b.residual(p));
}

TEST(TopkCompressor, LoadRejectsAnotherLayoutAndKeepsItsState) {
  TopkCompressor a({3000}, options({0.9}));
  std::stringstream state;
  a.save_state(state);
  TopkCompressor b({4000}, options({0.9}));
  EXPECT_THROW(b.load_state(state), std::runtime_error);
  EXPECT_EQ(b.residual(0).size(), 4000u);
  std::stringstream garbage("not a state");
  EXPECT_THROW(b.load_state(garbage), std::runtime_error);
}

}  // namespace
}  // namespace gw::compressors
