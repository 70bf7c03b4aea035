// The split sparse allreduce (Note [Sparse allreduce by split]) under a real mpirun, at every
// world size it runs with: against the allgatherv on the same selections, and conservation of
// every value (what is not applied stays in some rank's residual).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "compressors/topk_compressor.h"
#include "plugin/comm/counting_communicator.h"
#include "plugin/comm/mpi/mpi_runtime.h"
#include "plugin/exchange/bucket_exchange.h"
#include "tests/compressors/compressor_test_util.h"
#include "tests/plugin/rank_sums.h"
#include "tests/plugin/sparse_exchange_util.h"

namespace gw {
namespace {

using compressors::BucketView;
using compressors::SparseAlgo;
using compressors::SparseWire;
using compressors::SparsifyOptions;
using compressors::TopkCompressor;

const std::vector<std::size_t>& kNumels = testing::sparse_numels();

BucketView bucket_over(std::vector<float>& storage) {
  return compressors::testing::make_bucket(storage, kNumels);
}

using testing::sum_over_ranks;

// One step of each algorithm on the same gradients: the split's result equals the allgatherv's
// bit for bit wherever the split kept a value (the same adds in the same order) and is 0
// elsewhere, keeps at most ceil(k / n) per range, and loses nothing: summed over the ranks,
// residual + result == gradient, for both.
TEST(SparseSplit, EqualsTheAllgatherOnTheKeptSetAndLosesNothing) {
  CountingCommunicator comm(make_mpi_world_communicator());
  const int n = comm.size();
  const int rank = comm.rank();
  TopkCompressor gather(
      kNumels, testing::sparse_options(SparsifyOptions::Algo::kAllgather, SparseWire::kPairs));
  TopkCompressor split(kNumels,
                       testing::sparse_options(SparsifyOptions::Algo::kSplit, SparseWire::kPairs));
  std::vector<float> a_storage, b_storage;
  const BucketView a = bucket_over(a_storage), b = bucket_over(b_storage);
  const std::vector<float> g = testing::sparse_gradient(rank, 0, a.numel);
  std::copy(g.begin(), g.end(), a_storage.begin());
  std::copy(g.begin(), g.end(), b_storage.begin());
  BucketExchange a_exchange, b_exchange;
  gather.begin_step(0);
  split.begin_step(0);
  EXPECT_EQ(a_exchange.run(comm, gather, a).sparse_algo, SparseAlgo::kAllgather);
  const compressors::ExchangePlan plan = b_exchange.run(comm, split, b);
  ASSERT_EQ(plan.sparse_algo, SparseAlgo::kSplit);
  ASSERT_EQ(plan.sparse.size(), kNumels.size());

  std::size_t kept_total = 0;
  for (std::size_t j = 0; j < plan.sparse.size(); ++j) {
    const compressors::TensorSlot& t = b.tensors[plan.sparse[j]];
    for (int r = 0; r < n; ++r) {
      const compressors::SplitRange range = compressors::split_range(t.numel, n, r);
      std::size_t kept = 0;
      for (std::size_t i = range.begin; i < range.begin + range.len; ++i) {
        const float got = b_storage[t.offset + i];
        if (got == 0.0f) continue;
        ++kept;
        std::uint32_t got_bits, want_bits;
        std::memcpy(&got_bits, &got, 4);
        std::memcpy(&want_bits, &a_storage[t.offset + i], 4);
        ASSERT_EQ(got_bits, want_bits) << "tensor " << j << " index " << i;
      }
      EXPECT_LE(kept, compressors::split_k(plan.k[j], n)) << "tensor " << j << " range " << r;
      kept_total += kept;
    }
  }
  EXPECT_GT(kept_total, 0u);

  const std::vector<double> gsum = sum_over_ranks(comm, g);
  const std::vector<double> a_res = sum_over_ranks(comm, testing::all_residuals(gather));
  const std::vector<double> b_res = sum_over_ranks(comm, testing::all_residuals(split));
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double scale = 1e-5 * (1.0 + std::fabs(gsum[i]));
    ASSERT_NEAR(a_res[i] + a_storage[i], gsum[i], scale) << "allgather, element " << i;
    ASSERT_NEAR(b_res[i] + b_storage[i], gsum[i], scale) << "split, element " << i;
  }
  // The bucket is the same on every rank.
  const std::vector<double> total = sum_over_ranks(comm, b_storage);
  for (std::size_t i = 0; i < g.size(); ++i) {
    ASSERT_EQ(total[i], static_cast<double>(b_storage[i]) * n) << "element " << i;
  }
}

// Over several steps on every wire, everything accumulated is either applied or in a residual:
// sum over ranks and steps of gradients == sum of results + sum over ranks of residuals. With
// low-bit values each rank's range is its own segment, its scales per block of that segment, and
// what the code drops is kept range by range (Note [Low-bit wire values]).
TEST(SparseSplit, ConservesEveryValueOverStepsOnEveryWire) {
  CountingCommunicator comm(make_mpi_world_communicator());
  const int rank = comm.rank();
  for (SparseWire wire :
       {SparseWire::kPairs, SparseWire::kCompact, SparseWire::kCompact4, SparseWire::kCompact2}) {
    TopkCompressor split(kNumels, testing::sparse_options(SparsifyOptions::Algo::kSplit, wire));
    std::vector<float> storage;
    const BucketView b = bucket_over(storage);
    BucketExchange exchange;
    std::vector<double> applied(b.numel, 0.0), sent(b.numel, 0.0);
    for (int step = 0; step < 6; ++step) {
      const std::vector<float> g = testing::sparse_gradient(rank, step, b.numel);
      for (std::size_t i = 0; i < g.size(); ++i) sent[i] += g[i];
      std::copy(g.begin(), g.end(), storage.begin());
      split.begin_step(step);
      exchange.run(comm, split, b);
      for (std::size_t i = 0; i < g.size(); ++i) applied[i] += storage[i];
    }
    const std::vector<float> sent_f(sent.begin(), sent.end());
    const std::vector<double> sent_all = sum_over_ranks(comm, sent_f);
    const std::vector<double> residuals = sum_over_ranks(comm, testing::all_residuals(split));
    for (std::size_t i = 0; i < b.numel; ++i) {
      const double scale = 1e-4 * (1.0 + std::fabs(sent_all[i]));
      ASSERT_NEAR(applied[i] + residuals[i], sent_all[i], scale)
          << static_cast<int>(wire) << " (SparseWire), element " << i;
    }
  }
}

// The split's gradient bytes per rank stay near 3k (n - 1) / n pairs where the allgatherv's grow
// as k (n - 1): from 4 ranks on it sends fewer (GRADWIRE_SPARSE_ALGO=auto's threshold).
TEST(SparseSplit, SendsFewerBytesThanTheAllgatherFromFourRanks) {
  CountingCommunicator comm(make_mpi_world_communicator());
  const int n = comm.size();
  if (n < compressors::SparsifyingCompressor::kSplitFromRanks) {
    GTEST_SKIP() << "the split pays from 4 ranks on";
  }
  std::uint64_t bytes[2] = {0, 0};
  int i = 0;
  for (auto algo : {SparsifyOptions::Algo::kAllgather, SparsifyOptions::Algo::kSplit}) {
    TopkCompressor c(kNumels, testing::sparse_options(algo, SparseWire::kPairs));
    std::vector<float> storage;
    const BucketView b = bucket_over(storage);
    BucketExchange exchange;
    const std::uint64_t before = comm.counters()[TrafficKind::kGradient].sent_bytes;
    for (int step = 0; step < 3; ++step) {
      const std::vector<float> g = testing::sparse_gradient(comm.rank(), step, b.numel);
      std::copy(g.begin(), g.end(), storage.begin());  // the bucket keeps pointing at storage
      c.begin_step(step);
      exchange.run(comm, c, b);
    }
    bytes[i++] = comm.counters()[TrafficKind::kGradient].sent_bytes - before;
  }
  EXPECT_LT(bytes[1], bytes[0]) << "split " << bytes[1] << " allgather " << bytes[0];
}

}  // namespace
}  // namespace gw
