// CountingCommunicator in one process, over a scripted communicator: the byte model per call, and
// errors from the wrapped communicator's handles reaching the caller's wait().
#include <gtest/gtest.h>

#include "plugin/comm/counting_communicator.h"
#include "plugin/comm/hierarchical_communicator.h"

namespace gw {
namespace {

// A communicator of `size` ranks seen from `rank` whose operations do nothing and whose handles
// fail on wait() when `fail` is set.
class ScriptedCommunicator : public Communicator {
 public:
  ScriptedCommunicator(int rank, int size, bool fail, std::vector<int> nodes = {})
      : rank_(rank), size_(size), fail_(fail), nodes_(std::move(nodes)) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::vector<int> node_of_rank() const override { return nodes_; }
  WorkHandle start(const Collective&) override { return std::make_unique<Handle>(fail_); }
  void barrier() override {}

 private:
  struct Handle : Work {
    explicit Handle(bool fail) : fail(fail) {}
    void wait() override {
      if (fail) throw CommError("scripted failure on rank 1");
    }
    bool fail;
  };
  int rank_, size_;
  bool fail_;
  std::vector<int> nodes_;
};

TEST(CountingCommunicator, AllreduceBytesFollowTheChunkModel) {
  // 10 elements over 4 ranks: chunks 3, 3, 2, 2.
  EXPECT_EQ(CountingCommunicator::allreduce_bytes(10, 4, 0, 4), (10 + 2 * 3) * 4u);
  EXPECT_EQ(CountingCommunicator::allreduce_bytes(10, 4, 3, 4), (10 + 2 * 2) * 4u);
  EXPECT_EQ(CountingCommunicator::allreduce_bytes(10, 4, 0, 1), 0u);
  EXPECT_EQ(CountingCommunicator::allreduce_bytes(8, 2, 1, 2), 16u);  // 2 ranks: the whole buffer
  EXPECT_EQ(CountingCommunicator::allreduce_bytes(0, 4, 2, 4), 0u);
  // Divisible counts give 2(n-1)/n x bytes.
  EXPECT_EQ(CountingCommunicator::allreduce_bytes(1 << 20, 4, 1, 4), 2u * 3 * (1 << 20));
}

TEST(CountingCommunicator, CountsPerKindAndCall) {
  CountingCommunicator comm(std::make_unique<ScriptedCommunicator>(1, 4, false));
  float buf[8] = {};
  comm.allreduce(buf, 8, DataType::kFloat32, ReduceOp::kSum, TrafficKind::kGradient);
  comm.allreduce(buf, 8, DataType::kFloat32, ReduceOp::kSum, TrafficKind::kGradient);
  comm.broadcast(buf, 8, DataType::kFloat32, 0, TrafficKind::kParameter);  // not the root
  comm.allgatherv(buf, 2, buf, {1, 2, 3, 2}, DataType::kFloat32, TrafficKind::kControl);
  const auto c = comm.counters();
  EXPECT_EQ(c[TrafficKind::kGradient].calls, 2u);
  EXPECT_EQ(c[TrafficKind::kGradient].sent_bytes, 2u * (8 + 2 * 2) * 4);
  EXPECT_EQ(c[TrafficKind::kParameter].sent_bytes, 0u);
  EXPECT_EQ(c[TrafficKind::kParameter].received_bytes, 32u);
  EXPECT_EQ(c[TrafficKind::kControl].sent_bytes, 3u * 2 * 4);
  EXPECT_EQ(c[TrafficKind::kControl].received_bytes, (1u + 3 + 2) * 4);
  EXPECT_EQ(c.total_sent(), 2u * (8 + 2 * 2) * 4 + 3u * 2 * 4);
  comm.reset();
  EXPECT_EQ(comm.counters().total_sent(), 0u);
}

// A float16 all-reduce moves 2-byte elements, so it is charged exactly half the bytes of a float32
// one of the same count, whatever the count, rank and size, blocking or async.
TEST(CountingCommunicator, Float16AllreduceIsChargedHalfTheFloat32Bytes) {
  for (int size : {2, 3, 4, 7}) {
    for (int rank = 0; rank < size; ++rank) {
      for (std::size_t count : {0, 1, 7, 10, 1000, 100003}) {
        SCOPED_TRACE("count " + std::to_string(count) + ", rank " + std::to_string(rank) + " of " +
                     std::to_string(size));
        CountingCommunicator half(std::make_unique<ScriptedCommunicator>(rank, size, false));
        CountingCommunicator single(std::make_unique<ScriptedCommunicator>(rank, size, false));
        half.allreduce(nullptr, count, DataType::kFloat16, ReduceOp::kSum, TrafficKind::kGradient);
        half.allreduce_async(nullptr, count, DataType::kFloat16, ReduceOp::kMax,
                             TrafficKind::kGradient)
            ->wait();
        single.allreduce(nullptr, count, DataType::kFloat32, ReduceOp::kSum,
                         TrafficKind::kGradient);
        single
            .allreduce_async(nullptr, count, DataType::kFloat32, ReduceOp::kMax,
                             TrafficKind::kGradient)
            ->wait();
        const auto h = half.counters()[TrafficKind::kGradient];
        const auto f = single.counters()[TrafficKind::kGradient];
        EXPECT_EQ(2 * h.sent_bytes, f.sent_bytes);
        EXPECT_EQ(2 * h.received_bytes, f.received_bytes);
        EXPECT_EQ(h.sent_bytes, 2 * CountingCommunicator::allreduce_bytes(count, 2, rank, size));
        EXPECT_EQ(h.calls, 2u);
        if (count >= static_cast<std::size_t>(size)) EXPECT_GT(h.sent_bytes, 0u);
      }
    }
  }
}

// Rank 1 of 4 sends {2, 5, 0, 3} and receives {4, 5, 1, 0}: its own block (5) is not charged,
// either way, blocking or async; a zero block costs nothing.
TEST(CountingCommunicator, AlltoallvChargesTheBlocksForOtherRanks) {
  CountingCommunicator comm(std::make_unique<ScriptedCommunicator>(1, 4, false));
  const std::vector<std::size_t> send = {2, 5, 0, 3}, recv = {4, 5, 1, 0};
  comm.alltoallv(nullptr, send, nullptr, recv, DataType::kFloat32, TrafficKind::kGradient);
  auto c = comm.counters()[TrafficKind::kGradient];
  EXPECT_EQ(c.sent_bytes, (2u + 0 + 3) * 4);
  EXPECT_EQ(c.received_bytes, (4u + 1 + 0) * 4);
  EXPECT_EQ(c.calls, 1u);
  comm.alltoallv_async(nullptr, send, nullptr, recv, DataType::kFloat16, TrafficKind::kGradient)
      ->wait();
  c = comm.counters()[TrafficKind::kGradient];
  EXPECT_EQ(c.sent_bytes, (2u + 0 + 3) * 4 + (2u + 0 + 3) * 2);
  EXPECT_EQ(c.received_bytes, (4u + 1 + 0) * 4 + (4u + 1 + 0) * 2);
  EXPECT_EQ(c.calls, 2u);
  EXPECT_EQ(comm.counters()[TrafficKind::kControl].calls, 0u);

  // A lone rank exchanges only with itself: nothing is charged but the call.
  CountingCommunicator alone(std::make_unique<ScriptedCommunicator>(0, 1, false));
  alone.alltoallv(nullptr, {7}, nullptr, {7}, DataType::kInt64, TrafficKind::kControl);
  EXPECT_EQ(alone.counters()[TrafficKind::kControl].sent_bytes, 0u);
  EXPECT_EQ(alone.counters()[TrafficKind::kControl].received_bytes, 0u);
  EXPECT_EQ(alone.counters()[TrafficKind::kControl].calls, 1u);
}

// Note [What the counters count], the split by node: 4 ranks on 2 nodes of 2.
TEST(CountingCommunicator, InterNodeBytesFollowTheNodesOfTheRanks) {
  const std::vector<int> nodes = {0, 0, 1, 1};
  std::uint64_t allreduce_inter_per_node[2] = {0, 0};
  for (int r = 0; r < 4; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    CountingCommunicator comm(std::make_unique<ScriptedCommunicator>(r, 4, false, nodes));
    EXPECT_EQ(comm.node_of_rank(), nodes);
    float buf[8] = {};
    comm.allreduce(buf, 8, DataType::kFloat32, ReduceOp::kSum, TrafficKind::kGradient);
    const auto g = comm.counters()[TrafficKind::kGradient];
    EXPECT_EQ(g.sent_bytes, 48u);  // (8 + 2 x 2) x 4
    // The ring in rank order crosses from rank 1 to 2 and from 3 to 0.
    EXPECT_EQ(g.inter_node_sent_bytes, r == 1 || r == 3 ? 48u : 0u);
    EXPECT_EQ(g.inter_node_received_bytes, r == 0 || r == 2 ? 48u : 0u);
    allreduce_inter_per_node[nodes[static_cast<std::size_t>(r)]] += g.inter_node_sent_bytes;

    comm.allgatherv(buf, 2, buf, {2, 2, 3, 1}, DataType::kFloat32, TrafficKind::kControl);
    const auto c = comm.counters()[TrafficKind::kControl];
    EXPECT_EQ(c.sent_bytes, 3u * 2 * 4);
    EXPECT_EQ(c.inter_node_sent_bytes, 2u * 2 * 4);  // to the 2 ranks of the other node
    EXPECT_EQ(c.inter_node_received_bytes, (r < 2 ? 3u + 1 : 2u + 2) * 4);

    comm.alltoallv(buf, {1, 2, 3, 2}, buf, {2, 1, 1, 1}, DataType::kFloat32,
                   TrafficKind::kParameter);
    comm.broadcast(buf, 4, DataType::kFloat32, 0, TrafficKind::kParameter);
    const auto p = comm.counters()[TrafficKind::kParameter];
    const std::uint64_t to_other_node = r < 2 ? 3 + 2 : 1 + 2;
    const std::uint64_t from_other_node = r < 2 ? 1 + 1 : 2 + 1;
    EXPECT_EQ(p.inter_node_sent_bytes, (to_other_node + (r == 0 ? 2 * 4 : 0)) * 4);
    EXPECT_EQ(p.inter_node_received_bytes, (from_other_node + (r >= 2 ? 4 : 0)) * 4);
  }
  // Each node's link carries 2(n-1)/n of the buffer: 48 bytes of 32.
  EXPECT_EQ(allreduce_inter_per_node[0], 48u);
  EXPECT_EQ(allreduce_inter_per_node[1], 48u);
}

TEST(CountingCommunicator, WithoutNodesEveryByteCrosses) {
  CountingCommunicator comm(std::make_unique<ScriptedCommunicator>(2, 4, false));
  float buf[8] = {};
  comm.allreduce(buf, 8, DataType::kFloat32, ReduceOp::kSum, TrafficKind::kGradient);
  comm.allgatherv(buf, 2, buf, {2, 2, 2, 2}, DataType::kFloat32, TrafficKind::kGradient);
  const auto g = comm.counters()[TrafficKind::kGradient];
  EXPECT_GT(g.sent_bytes, 0u);
  EXPECT_EQ(g.inter_node_sent_bytes, g.sent_bytes);
  EXPECT_EQ(g.inter_node_received_bytes, g.received_bytes);
}

// A HierarchicalCommunicator's allreduce is charged by stage: only the cross allreduce of the
// shard leaves the node. At 2 nodes x 2 ranks each node's link carries 2/3 of the flat ring's.
TEST(CountingCommunicator, TwoLevelAllreduceIsChargedStageByStage) {
  const std::vector<int> nodes = {0, 0, 1, 1};
  std::uint64_t two_level_per_node[2] = {0, 0}, flat_per_node[2] = {0, 0};
  for (int r = 0; r < 4; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const int node = r / 2, local_rank = r % 2;
    CountingCommunicator two(std::make_unique<HierarchicalCommunicator>(
        std::make_unique<ScriptedCommunicator>(r, 4, false, nodes),
        std::make_unique<ScriptedCommunicator>(local_rank, 2, false),
        std::make_unique<ScriptedCommunicator>(node, 2, false)));
    CountingCommunicator flat(std::make_unique<ScriptedCommunicator>(r, 4, false, nodes));
    EXPECT_EQ(two.node_of_rank(), nodes);
    float buf[12] = {};
    two.allreduce(buf, 12, DataType::kFloat32, ReduceOp::kSum, TrafficKind::kGradient);
    flat.allreduce(buf, 12, DataType::kFloat32, ReduceOp::kSum, TrafficKind::kGradient);
    const auto g = two.counters()[TrafficKind::kGradient];
    // Node-local allreduce of 12 over 2 (12 x 4 bytes), cross allreduce of the 6-element shard
    // over 2 (6 x 4), node-local allgather of the shard to the 1 other rank (6 x 4).
    EXPECT_EQ(g.sent_bytes, (12u + 6 + 6) * 4);
    EXPECT_EQ(g.received_bytes, (12u + 6 + 6) * 4);
    EXPECT_EQ(g.inter_node_sent_bytes, 6u * 4);
    EXPECT_EQ(g.inter_node_received_bytes, 6u * 4);
    two_level_per_node[node] += g.inter_node_sent_bytes;
    flat_per_node[node] += flat.counters()[TrafficKind::kGradient].inter_node_sent_bytes;
  }
  for (int node = 0; node < 2; ++node) {
    EXPECT_EQ(two_level_per_node[node], 48u);  // 2 ranks x 6 floats
    EXPECT_EQ(flat_per_node[node], 72u);       // 2(4-1)/4 x 12 floats
  }
}

// The levels of a two-level communicator, seen through the counters: collectives on the local
// level stay inside the node, those on the cross level all cross, and both land in the counters
// of the communicator that exposes them. A flat communicator has no levels.
TEST(CountingCommunicator, CountsItsLevelsAsInsideAndAcross) {
  // Rank 4 of 6 as 3 nodes x 2, the nodes interleaved in world order: node 1, local rank 1.
  const std::vector<int> nodes = {0, 1, 2, 0, 1, 2};
  CountingCommunicator two(std::make_unique<HierarchicalCommunicator>(
      std::make_unique<ScriptedCommunicator>(4, 6, false, nodes),
      std::make_unique<ScriptedCommunicator>(1, 2, false),
      std::make_unique<ScriptedCommunicator>(1, 3, false)));
  const Levels* levels = two.levels();
  ASSERT_NE(levels, nullptr);
  EXPECT_EQ(levels->local->size(), 2);
  EXPECT_EQ(levels->cross->size(), 3);
  // Node j's local rank q is the q-th rank of node j in world order.
  EXPECT_EQ(levels->world_rank, (std::vector<int>{0, 3, 1, 4, 2, 5}));
  std::uint32_t words[8] = {};
  levels->local->alltoallv(words, {2, 3}, words + 5, {1, 2}, DataType::kInt32,
                           TrafficKind::kGradient);
  auto g = two.counters()[TrafficKind::kGradient];
  EXPECT_EQ(g.sent_bytes, 2u * 4);  // to local rank 0 (its own block stays)
  EXPECT_EQ(g.received_bytes, 1u * 4);
  EXPECT_EQ(g.inter_node_sent_bytes, 0u);
  EXPECT_EQ(g.inter_node_received_bytes, 0u);
  levels->cross->allgatherv(words, 3, words + 3, {1, 3, 2}, DataType::kInt32,
                            TrafficKind::kGradient);
  g = two.counters()[TrafficKind::kGradient];
  EXPECT_EQ(g.sent_bytes, (2u + 2 * 3) * 4);
  EXPECT_EQ(g.inter_node_sent_bytes, 2u * 3 * 4);
  EXPECT_EQ(g.inter_node_received_bytes, (1u + 2) * 4);
  EXPECT_EQ(g.calls, 2u);

  CountingCommunicator flat(std::make_unique<ScriptedCommunicator>(4, 6, false, nodes));
  EXPECT_EQ(flat.levels(), nullptr);
}

TEST(CountingCommunicator, ErrorsOfTheWrappedCommunicatorReachWait) {
  CountingCommunicator comm(std::make_unique<ScriptedCommunicator>(1, 2, true));
  float x = 0;
  WorkHandle w =
      comm.allreduce_async(&x, 1, DataType::kFloat32, ReduceOp::kSum, TrafficKind::kGradient);
  try {
    w->wait();
    FAIL() << "wait() did not rethrow";
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1"), std::string::npos);
  }
  EXPECT_THROW(CountingCommunicator(nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace gw
