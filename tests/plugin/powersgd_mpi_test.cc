// The powersgd compressor (Note [PowerSGD]) through BucketExchange under a real mpirun: a
// full-rank approximation is the dense sum, error feedback loses nothing over steps, every rank
// ends with the same bucket, and the bytes are the two factor allreduces'.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <sstream>
#include <vector>

#include "compressors/none_compressor.h"
#include "compressors/powersgd_compressor.h"
#include "plugin/exchange/bucket_exchange.h"
#include "plugin/comm/counting_communicator.h"
#include "plugin/comm/mpi/mpi_runtime.h"
#include "tests/compressors/compressor_test_util.h"
#include "tests/plugin/rank_sums.h"

namespace gw {
namespace {

using compressors::BucketView;
using compressors::PowerSgdCompressor;
using compressors::PowerSgdOptions;

// A layer's weight [64, 48] and bias, a wide matrix [30, 100], a matrix too small to compress
// [3, 3], and one with a single row (never smaller as factors).
const std::vector<std::size_t> kNumels = {64 * 48, 64, 30 * 100, 9, 20};
const std::vector<std::size_t> kRows = {64, 0, 30, 3, 1};

std::vector<float> gradient(int rank, int step, std::size_t n) {
  std::mt19937_64 rng(7919 * static_cast<std::uint64_t>(step) + static_cast<std::uint64_t>(rank));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> g(n);
  for (float& x : g) x = normal(rng);
  return g;
}

using testing::sum_over_ranks;

// Writes this rank's gradient of `step` into the bucket (over `storage`) and runs its exchange.
const compressors::ExchangePlan& run_step(Communicator& comm, PowerSgdCompressor& c,
                                          BucketExchange& exchange, const BucketView& b,
                                          std::vector<float>& storage, int step) {
  const std::vector<float> g = gradient(comm.rank(), step, b.numel);
  std::copy(g.begin(), g.end(), storage.begin());  // the bucket keeps pointing at storage
  c.begin_step(step);
  return exchange.run(comm, c, b);
}

std::vector<float> all_residuals(const PowerSgdCompressor& c) {
  std::vector<float> out;
  for (std::size_t p = 0; p < kNumels.size(); ++p) {
    std::vector<float> r = c.residual(p);
    if (r.empty()) r.assign(kNumels[p], 0.0f);  // sent whole: nothing kept
    out.insert(out.end(), r.begin(), r.end());
  }
  return out;
}

// The plan: before the start step everything goes whole; from it the two large matrices go as
// factors at the configured rank, the bias, the 3 x 3 and the single row whole.
TEST(PowerSgd, PlansFactorsForTheMatricesThatShrinkFromTheStartStep) {
  PowerSgdOptions o;
  o.rank = 4;
  o.start_step = 2;
  PowerSgdCompressor c(kNumels, kRows, o);
  std::vector<float> storage;
  const BucketView b = compressors::testing::make_bucket(storage, kNumels);
  c.begin_step(1);
  EXPECT_TRUE(c.plan(b, 4).all_dense());
  c.begin_step(2);
  const compressors::ExchangePlan plan = c.plan(b, 4);
  EXPECT_EQ(plan.low_rank, (std::vector<std::size_t>{0, 2}));
  EXPECT_EQ(plan.dense, (std::vector<std::size_t>{1, 3, 4}));
  ASSERT_EQ(plan.shapes.size(), 2u);
  EXPECT_EQ(plan.shapes[0].rows, 64u);
  EXPECT_EQ(plan.shapes[0].cols, 48u);
  EXPECT_EQ(plan.shapes[1].cols, 100u);
  EXPECT_EQ(plan.shapes[1].rank, 4u);
  EXPECT_EQ(plan.p_count(), (64u + 30u) * 4u);
  EXPECT_EQ(plan.q_count(), (48u + 100u) * 4u);
  EXPECT_EQ(c.warmup_end_step(), 2);
}

TEST(PowerSgd, RejectsRowsThatDoNotDivideAndRankZero) {
  EXPECT_THROW(PowerSgdCompressor({10}, {3}, PowerSgdOptions{}), std::invalid_argument);
  EXPECT_THROW(PowerSgdCompressor({10}, {2, 1}, PowerSgdOptions{}), std::invalid_argument);
  PowerSgdOptions zero;
  zero.rank = 0;
  EXPECT_THROW(PowerSgdCompressor({10}, {2}, zero), std::invalid_argument);
}

// With rank = min(rows, cols) the projection onto P keeps everything: the result is the dense sum
// over the ranks (to rounding), and the residuals sum to 0 over the ranks.
TEST(PowerSgd, RankAtLeastTheSmallerSideEqualsTheDenseSum) {
  CountingCommunicator comm(make_mpi_world_communicator());
  for (std::size_t rank : {std::size_t{3}, std::size_t{64}}) {
    PowerSgdOptions o;
    o.rank = rank;  // 3 is full rank for the 3 x 3 and the single row only; 64 for all
    o.start_step = 0;
    o.only_when_smaller = false;
    PowerSgdCompressor c(kNumels, kRows, o);
    compressors::NoneCompressor none;
    std::vector<float> storage, dense_storage;
    const BucketView b = compressors::testing::make_bucket(storage, kNumels);
    const BucketView d = compressors::testing::make_bucket(dense_storage, kNumels);
    BucketExchange exchange, dense_exchange;
    for (int step = 0; step < 2; ++step) {
      const compressors::ExchangePlan& plan = run_step(comm, c, exchange, b, storage, step);
      const std::vector<float> g = gradient(comm.rank(), step, b.numel);
      std::copy(g.begin(), g.end(), dense_storage.begin());
      ASSERT_EQ(plan.low_rank.size(), 4u);  // every tensor with rows
      dense_exchange.run(comm, none, d);
      for (std::size_t j = 0; j < plan.low_rank.size(); ++j) {
        const compressors::TensorSlot& t = b.tensors[plan.low_rank[j]];
        const bool full = plan.shapes[j].rank == std::min(plan.shapes[j].rows, plan.shapes[j].cols);
        if (!full) continue;
        for (std::size_t i = t.offset; i < t.offset + t.numel; ++i) {
          ASSERT_NEAR(storage[i], dense_storage[i], 1e-4 * (1.0 + std::fabs(dense_storage[i])))
              << "rank " << rank << " step " << step << " tensor " << t.parameter << " index "
              << i - t.offset;
        }
        // Each rank's residual is what P (the sum's column space) leaves of its own M: 0 when P
        // is square, otherwise 0 only summed over the ranks.
        const std::vector<double> r = sum_over_ranks(comm, c.residual(t.parameter));
        for (double x : r) ASSERT_NEAR(x, 0.0, 1e-3);
      }
    }
  }
}

// Over several steps, summed over the ranks: gradients == results + residuals (the error feedback
// loses nothing), and the result is the same bits on every rank (one P for all).
TEST(PowerSgd, ErrorFeedbackLosesNothingAndEveryRankAppliesTheSame) {
  CountingCommunicator comm(make_mpi_world_communicator());
  const auto n = static_cast<double>(comm.size());
  PowerSgdOptions o;
  o.rank = 2;
  o.start_step = 1;
  PowerSgdCompressor c(kNumels, kRows, o);
  std::vector<float> storage;
  const BucketView b = compressors::testing::make_bucket(storage, kNumels);
  BucketExchange exchange;
  std::vector<double> accumulated(b.numel, 0.0), applied(b.numel, 0.0);
  for (int step = 0; step < 6; ++step) {
    const std::vector<double> gsum = sum_over_ranks(comm, gradient(comm.rank(), step, b.numel));
    for (std::size_t i = 0; i < b.numel; ++i) accumulated[i] += gsum[i];
    const compressors::ExchangePlan& plan = run_step(comm, c, exchange, b, storage, step);
    EXPECT_EQ(plan.low_rank.size(), step >= 1 ? 2u : 0u);
    for (std::size_t i = 0; i < b.numel; ++i) applied[i] += storage[i];
    const std::vector<double> total = sum_over_ranks(comm, storage);
    for (std::size_t i = 0; i < b.numel; ++i) {
      ASSERT_EQ(total[i], static_cast<double>(storage[i]) * n) << "step " << step << " " << i;
    }
  }
  const std::vector<double> residuals = sum_over_ranks(comm, all_residuals(c));
  double largest_residual = 0.0;
  for (std::size_t i = 0; i < b.numel; ++i) {
    largest_residual = std::max(largest_residual, std::fabs(residuals[i]));
    ASSERT_NEAR(applied[i] + residuals[i], accumulated[i], 1e-3 * (1.0 + std::fabs(accumulated[i])))
        << "element " << i;
  }
  EXPECT_GT(largest_residual, 0.1);  // rank 2 of random matrices leaves plenty behind
}

// A low-rank step's gradient bytes are two allreduces: the whole tensors with every P, then every
// Q; a step before the start sends the dense allreduce of everything.
TEST(PowerSgd, SendsTheFactorsInTwoAllreduces) {
  CountingCommunicator comm(make_mpi_world_communicator());
  PowerSgdOptions o;
  o.rank = 2;
  o.start_step = 1;
  PowerSgdCompressor c(kNumels, kRows, o);
  std::vector<float> storage;
  const BucketView b = compressors::testing::make_bucket(storage, kNumels);
  BucketExchange exchange;
  const int r = comm.rank(), n = comm.size();
  for (int step = 0; step < 2; ++step) {
    const std::uint64_t before = comm.counters()[TrafficKind::kGradient].sent_bytes;
    const compressors::ExchangePlan& plan = run_step(comm, c, exchange, b, storage, step);
    const std::uint64_t sent = comm.counters()[TrafficKind::kGradient].sent_bytes - before;
    if (step == 0) {
      EXPECT_EQ(sent, CountingCommunicator::allreduce_bytes(b.numel, 4, r, n));
    } else {
      const std::size_t whole = 64 + 9 + 20;
      EXPECT_EQ(plan.p_count(), (64u + 30u) * 2u);
      EXPECT_EQ(sent, CountingCommunicator::allreduce_bytes(whole + plan.p_count(), 4, r, n) +
                          CountingCommunicator::allreduce_bytes(plan.q_count(), 4, r, n));
    }
  }
}

// Saving mid-run and loading into a fresh compressor continues with the same bits: the residuals
// and the warm-started Q are the state.
TEST(PowerSgd, SaveThenLoadContinuesBitIdentically) {
  CountingCommunicator comm(make_mpi_world_communicator());
  PowerSgdOptions o;
  o.rank = 1;
  o.start_step = 0;
  PowerSgdCompressor a(kNumels, kRows, o);
  std::vector<float> a_storage, b_storage;
  const BucketView a_view = compressors::testing::make_bucket(a_storage, kNumels);
  const BucketView b_view = compressors::testing::make_bucket(b_storage, kNumels);
  BucketExchange a_exchange, b_exchange;
  for (int step = 0; step < 3; ++step) run_step(comm, a, a_exchange, a_view, a_storage, step);
  std::stringstream saved;
  a.save_state(saved);
  PowerSgdCompressor b(kNumels, kRows, o);
  b.load_state(saved);
  for (int step = 3; step < 5; ++step) {
    run_step(comm, a, a_exchange, a_view, a_storage, step);
    run_step(comm, b, b_exchange, b_view, b_storage, step);
    ASSERT_EQ(0, std::memcmp(a_storage.data(), b_storage.data(), a_storage.size() * 4))
        << "step " << step;
  }
  // Another layout's state is refused, and leaves the compressor as it was.
  std::stringstream again;
  a.save_state(again);
  PowerSgdCompressor other({64 * 48}, {64}, o);
  EXPECT_THROW(other.load_state(again), std::runtime_error);
}

}  // namespace
}  // namespace gw
