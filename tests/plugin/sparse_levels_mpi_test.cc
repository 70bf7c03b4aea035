// The split sparse allreduce over two levels (Note [Sparse allreduce over two levels]) under a real
// mpirun, for every grouping of the world into N > 1 nodes of L > 1 ranks (4 ranks: 2 x 2; 6: 3 x 2
// and 2 x 3; 8: 4 x 2 and 2 x 4): a kept value is the sum of what the ranks sent for it, nothing
// is lost, every rank ends with the same bucket, fewer bytes cross between nodes than under the
// flat split, and a malformed message from a node-local peer stops every rank naming that peer.
#include <gtest/gtest.h>

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compressors/sparse_message.h"
#include "compressors/topk_compressor.h"
#include "plugin/comm/counting_communicator.h"
#include "plugin/comm/hierarchical_communicator.h"
#include "plugin/comm/mpi/mpi_communicator.h"
#include "plugin/comm/mpi/mpi_runtime.h"
#include "plugin/comm/mpi/node_groups.h"
#include "plugin/config/config.h"
#include "plugin/config/params.h"
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

int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

// Every local size that makes two real levels: more than one node of more than one rank.
std::vector<int> two_level_sizes() {
  const int n = world_size();
  std::vector<int> out;
  for (int l = 2; l < n; ++l) {
    if (n % l == 0) out.push_back(l);
  }
  return out;
}

std::unique_ptr<CountingCommunicator> two_levels(int local_size) {
  return std::make_unique<CountingCommunicator>(make_hierarchical_mpi_communicator(
      MPI_COMM_WORLD, find_node_groups(MPI_COMM_WORLD, local_size)));
}

// The flat world communicator, knowing the same nodes (for the counters' inter-node split).
std::unique_ptr<CountingCommunicator> flat(int local_size) {
  config::Config cfg;
  cfg.set(config::keys::kHierarchical, "0");
  cfg.set(config::keys::kHierarchyLocalSize, std::to_string(local_size));
  return std::make_unique<CountingCommunicator>(make_mpi_world_communicator(cfg));
}

// Integers on node `node`'s stripe of each tensor (elements i with i % nodes == node), about half
// of them, zero elsewhere: every sum is exact in any order, and a value at an element comes from
// one node alone.
std::vector<float> striped_gradient(int rank, int node, int nodes, const BucketView& b) {
  std::mt19937_64 rng(77 + static_cast<std::uint64_t>(rank));
  std::uniform_int_distribution<int> value(1, 200), coin(0, 1);
  std::vector<float> g(b.numel, 0.0f);
  for (const compressors::TensorSlot& t : b.tensors) {
    for (std::size_t i = static_cast<std::size_t>(node); i < t.numel;
         i += static_cast<std::size_t>(nodes)) {
      if (coin(rng) == 1)
        g[t.offset + i] = static_cast<float>(coin(rng) == 1 ? value(rng) : -value(rng));
    }
  }
  return g;
}

using testing::sum_over_ranks;

// One step on integer gradients, each element fed by one node only. The two levels' result is
// nonzero exactly where some node's merge kept the element, and there it must equal, bit for bit,
// the allgatherv's (the sum of every rank's selected value there: only that node's ranks have
// one). The merges must drop something (else step 2 is not tested), nothing is lost (residuals +
// result == gradients, summed over the ranks), each range keeps at most split_k, and every rank
// ends with the same bucket.
TEST(SparseLevels, KeepsTheNodesSumsAndLosesNothing) {
  const std::vector<int> sizes = two_level_sizes();
  if (sizes.empty()) GTEST_SKIP() << "no grouping of " << world_size() << " ranks has two levels";
  for (int l : sizes) {
    SCOPED_TRACE("local size " + std::to_string(l) + " of " + std::to_string(world_size()));
    auto comm = two_levels(l);
    ASSERT_NE(comm->levels(), nullptr);
    const int n = comm->size(), rank = comm->rank(), nodes = n / l;
    TopkCompressor gather(
        kNumels, testing::sparse_options(SparsifyOptions::Algo::kAllgather, SparseWire::kPairs));
    TopkCompressor split(
        kNumels, testing::sparse_options(SparsifyOptions::Algo::kSplit, SparseWire::kPairs));
    std::vector<float> a_storage, b_storage;
    const BucketView a = compressors::testing::make_bucket(a_storage, kNumels);
    const BucketView b = compressors::testing::make_bucket(b_storage, kNumels);
    const std::vector<float> g = striped_gradient(rank, rank / l, nodes, a);
    std::copy(g.begin(), g.end(), a_storage.begin());
    std::copy(g.begin(), g.end(), b_storage.begin());
    BucketExchange a_exchange, b_exchange;
    gather.begin_step(0);
    split.begin_step(0);
    ASSERT_EQ(a_exchange.run(*comm, gather, a).sparse_algo, SparseAlgo::kAllgather);
    const compressors::ExchangePlan plan = b_exchange.run(*comm, split, b);
    ASSERT_EQ(plan.sparse_algo, SparseAlgo::kSplit);

    std::size_t kept = 0, dropped = 0, wrong = 0;
    for (std::size_t j = 0; j < plan.sparse.size(); ++j) {
      const compressors::TensorSlot& t = b.tensors[plan.sparse[j]];
      for (int r = 0; r < n; ++r) {
        const compressors::SplitRange range = compressors::split_range(t.numel, n, r);
        std::size_t in_range = 0;
        for (std::size_t i = range.begin; i < range.begin + range.len; ++i) {
          const float got = b_storage[t.offset + i], want = a_storage[t.offset + i];
          if (got == 0.0f) {
            if (want != 0.0f) ++dropped;
            continue;
          }
          ++in_range;
          std::uint32_t got_bits, want_bits;
          std::memcpy(&got_bits, &got, 4);
          std::memcpy(&want_bits, &want, 4);
          if (got_bits != want_bits) ++wrong;
        }
        EXPECT_LE(in_range, compressors::split_k(plan.k[j], static_cast<std::size_t>(n)))
            << "tensor " << j << " range " << r;
        kept += in_range;
      }
    }
    EXPECT_EQ(wrong, 0u) << "kept values that are not the sum of what the ranks sent";
    EXPECT_GT(kept, 0u);
    EXPECT_GT(dropped, 0u) << "nothing was dropped: the merge's budget was not tested";

    const std::vector<double> gsum = sum_over_ranks(*comm, g);
    const std::vector<double> res = sum_over_ranks(*comm, testing::all_residuals(split));
    std::size_t lost = 0;
    for (std::size_t i = 0; i < g.size(); ++i) {
      if (res[i] + b_storage[i] != gsum[i]) ++lost;  // integers: exact
    }
    EXPECT_EQ(lost, 0u) << "elements where residuals + result differ from the gradients' sum";
    const std::vector<double> total = sum_over_ranks(*comm, b_storage);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < g.size(); ++i) {
      if (total[i] != static_cast<double>(b_storage[i]) * n) ++differ;
    }
    EXPECT_EQ(differ, 0u) << "elements where the ranks' buckets differ";
  }
}

// Over several steps on every wire, with floats that every rank selects some of: everything
// accumulated is applied or in a residual, summed over ranks and steps.
TEST(SparseLevels, ConservesEveryValueOverStepsOnEveryWire) {
  const std::vector<int> sizes = two_level_sizes();
  if (sizes.empty()) GTEST_SKIP() << "no grouping of " << world_size() << " ranks has two levels";
  for (int l : sizes) {
    auto comm = two_levels(l);
    for (SparseWire wire :
         {SparseWire::kPairs, SparseWire::kCompact, SparseWire::kCompact4, SparseWire::kCompact2}) {
      SCOPED_TRACE("local size " + std::to_string(l) + ", SparseWire " +
                   std::to_string(static_cast<int>(wire)));
      TopkCompressor split(kNumels, testing::sparse_options(SparsifyOptions::Algo::kSplit, wire));
      std::vector<float> storage;
      const BucketView b = compressors::testing::make_bucket(storage, kNumels);
      BucketExchange exchange;
      std::vector<double> applied(b.numel, 0.0), sent(b.numel, 0.0);
      for (int step = 0; step < 6; ++step) {
        const std::vector<float> g = testing::sparse_gradient(comm->rank(), step, b.numel);
        for (std::size_t i = 0; i < g.size(); ++i) sent[i] += g[i];
        std::copy(g.begin(), g.end(), storage.begin());
        split.begin_step(step);
        exchange.run(*comm, split, b);
        for (std::size_t i = 0; i < g.size(); ++i) applied[i] += storage[i];
      }
      const std::vector<float> sent_f(sent.begin(), sent.end());
      const std::vector<double> sent_all = sum_over_ranks(*comm, sent_f);
      const std::vector<double> residuals = sum_over_ranks(*comm, testing::all_residuals(split));
      std::size_t lost = 0;
      for (std::size_t i = 0; i < b.numel; ++i) {
        const double scale = 1e-4 * (1.0 + std::fabs(sent_all[i]));
        if (std::fabs(applied[i] + residuals[i] - sent_all[i]) > scale) ++lost;
      }
      EXPECT_EQ(lost, 0u) << "elements where applied + residuals differ from what was sent";
    }
  }
}

// The network carries one node's merged pairs instead of every rank's: the gradient bytes that
// cross between nodes, summed over a node's ranks, are at most 1.2 / L of the flat split's on the
// same gradients (the formula's 1 / L, with room for uneven selections), and the bytes inside
// the node are what pays for it.
TEST(SparseLevels, SendsAboutOneNodesShareAcrossNodes) {
  const std::vector<int> sizes = two_level_sizes();
  if (sizes.empty()) GTEST_SKIP() << "no grouping of " << world_size() << " ranks has two levels";
  for (int l : sizes) {
    SCOPED_TRACE("local size " + std::to_string(l) + " of " + std::to_string(world_size()));
    std::uint64_t across[2] = {0, 0};
    int which = 0;
    for (auto make : {flat, two_levels}) {
      auto comm = make(l);
      TopkCompressor c(
          kNumels, testing::sparse_options(SparsifyOptions::Algo::kSplit, SparseWire::kCompact));
      std::vector<float> storage;
      const BucketView b = compressors::testing::make_bucket(storage, kNumels);
      BucketExchange exchange;
      for (int step = 0; step < 3; ++step) {
        const std::vector<float> g = testing::sparse_gradient(comm->rank(), step, b.numel);
        std::copy(g.begin(), g.end(), storage.begin());
        c.begin_step(step);
        exchange.run(*comm, c, b);
      }
      // A node's bytes: the sum over its ranks (every node the same here, up to the selections).
      std::vector<float> mine(
          1, static_cast<float>(comm->counters()[TrafficKind::kGradient].inter_node_sent_bytes));
      across[which++] =
          static_cast<std::uint64_t>(sum_over_ranks(*comm, mine)[0] / (comm->size() / l));
    }
    RecordProperty("inter_node_bytes_flat_l" + std::to_string(l), std::to_string(across[0]));
    RecordProperty("inter_node_bytes_levels_l" + std::to_string(l), std::to_string(across[1]));
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
      std::printf(
          "local size %d: inter-node gradient bytes per node, flat split %llu, two levels %llu "
          "(%.3fx)\n",
          l, static_cast<unsigned long long>(across[0]), static_cast<unsigned long long>(across[1]),
          static_cast<double>(across[1]) / static_cast<double>(across[0]));
    EXPECT_GT(across[1], 0u);
    EXPECT_LE(static_cast<double>(across[1]), 1.2 / l * static_cast<double>(across[0]));
  }
}

// Corrupts, in the node-local alltoallv that starts the split over two levels, the first index
// local rank 1 sends this rank.
class CorruptingLocal : public Communicator {
 public:
  explicit CorruptingLocal(std::unique_ptr<Communicator> inner) : inner_(std::move(inner)) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  WorkHandle start(const Collective& c) override {
    if (c.op != CollectiveOp::kAlltoallv) return inner_->start(c);
    const std::size_t before = c.recv_counts[0], from_1 = c.recv_counts[1];
    auto w = inner_->start(c);
    w->wait();
    // Local rank 1's first message (its first range's): count word, then (index, value).
    if (c.type == DataType::kInt32 && c.kind == TrafficKind::kGradient && from_1 >= 3) {
      static_cast<std::uint32_t*>(c.recv)[before + 1] = 123456789;
    }
    return w;
  }
  void barrier() override { inner_->barrier(); }

 private:
  std::unique_ptr<Communicator> inner_;
};

TEST(SparseLevels, AMalformedMessageFromALocalPeerNamesItOnEveryRank) {
  const std::vector<int> sizes = two_level_sizes();
  if (sizes.empty()) GTEST_SKIP() << "no grouping of " << world_size() << " ranks has two levels";
  const int l = sizes.front();
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm local = MPI_COMM_NULL, cross = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank / l, rank, &local);
  MPI_Comm_split(MPI_COMM_WORLD, rank % l, rank, &cross);
  auto flat_comm = std::make_unique<MpiCommunicator>(MPI_COMM_WORLD);
  std::vector<int> nodes;
  for (int r = 0; r < world_size(); ++r) nodes.push_back(r / l);
  flat_comm->set_node_of_rank(nodes);
  CountingCommunicator comm(std::make_unique<HierarchicalCommunicator>(
      std::move(flat_comm),
      std::make_unique<CorruptingLocal>(std::make_unique<MpiCommunicator>(local)),
      std::make_unique<MpiCommunicator>(cross)));
  MPI_Comm_free(&local);
  MPI_Comm_free(&cross);
  // Distinct random values: each rank's selection of the first tensor spreads over its ranges, so
  // local rank 1's first message (the first tensor's pairs in one range) has a pair to corrupt.
  TopkCompressor split(kNumels,
                       testing::sparse_options(SparsifyOptions::Algo::kSplit, SparseWire::kPairs));
  std::vector<float> storage;
  const BucketView b = compressors::testing::make_bucket(storage, kNumels);
  const std::vector<float> g = testing::sparse_gradient(0, 0, b.numel);
  std::copy(g.begin(), g.end(), storage.begin());
  const std::vector<float> before = storage;
  split.begin_step(0);
  BucketExchange exchange;
  const int sender = rank / l * l + 1;  // this node's local rank 1
  try {
    exchange.run(comm, split, b);
    ADD_FAILURE() << "a corrupt message from a local peer was accepted";
  } catch (const compressors::PayloadError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("from rank " + std::to_string(sender) + " "), std::string::npos) << what;
    EXPECT_NE(what.find("123456789"), std::string::npos) << what;
  }
  EXPECT_EQ(storage, before) << "the bucket was touched";
}

}  // namespace
}  // namespace gw
