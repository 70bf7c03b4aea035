// The MPI communicator and its byte counters under a real mpirun (2, 3 and 4 ranks): exact
// closed-form results, and counters equal to the bytes of Note [What the counters count].
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "plugin/comm/counting_communicator.h"
#include "plugin/comm/mpi/mpi_runtime.h"

namespace gw {
namespace {

class CommTest : public ::testing::TestWithParam<std::size_t> {
 protected:
  void SetUp() override {
    comm_ = std::make_unique<CountingCommunicator>(make_mpi_world_communicator());
    n_ = comm_->size();
    r_ = comm_->rank();
  }
  std::unique_ptr<CountingCommunicator> comm_;
  int n_ = 1, r_ = 0;
};

// The bytes of one allreduce, written independently of the implementation: rank r owns chunk r of
// the count split n ways, sends the other n-1 chunks once and its own chunk n-1 times.
std::uint64_t expected_allreduce_bytes(std::size_t count, std::size_t elem, int r, int n) {
  if (n == 1) return 0;
  std::vector<std::uint64_t> chunk(n, count / n);
  for (std::size_t i = 0; i < count % n; ++i) ++chunk[i];
  return ((count - chunk[r]) + (n - 1) * chunk[r]) * elem;
}

TEST_P(CommTest, AllreduceSumIsExactAndCounted) {
  const std::size_t count = GetParam();
  std::vector<float> buf(count);
  for (std::size_t i = 0; i < count; ++i) buf[i] = static_cast<float>(r_ + static_cast<int>(i % 3));
  comm_->allreduce(buf.data(), count, DataType::kFloat32, ReduceOp::kSum, TrafficKind::kGradient);
  for (std::size_t i = 0; i < count; ++i) {
    const float expected = static_cast<float>(n_ * (n_ - 1) / 2 + n_ * static_cast<int>(i % 3));
    ASSERT_EQ(buf[i], expected) << "at " << i;
  }
  const auto c = comm_->counters();
  const std::uint64_t bytes = expected_allreduce_bytes(count, 4, r_, n_);
  EXPECT_EQ(c[TrafficKind::kGradient].sent_bytes, bytes);
  EXPECT_EQ(c[TrafficKind::kGradient].received_bytes, bytes);
  EXPECT_EQ(c[TrafficKind::kGradient].calls, 1u);
  EXPECT_EQ(c[TrafficKind::kParameter].sent_bytes, 0u);

  // Summed over ranks this is the ring allreduce's 2(n-1) x bytes.
  std::int64_t sent = static_cast<std::int64_t>(bytes);
  comm_->allreduce(&sent, 1, DataType::kInt64, ReduceOp::kSum, TrafficKind::kControl);
  EXPECT_EQ(sent, static_cast<std::int64_t>(2 * (n_ - 1) * count * 4));
}

TEST_P(CommTest, AllgathervPlacesEveryBlockInRankOrder) {
  const std::size_t base = GetParam();
  std::vector<std::size_t> counts(n_);
  for (int r = 0; r < n_; ++r) counts[r] = base + static_cast<std::size_t>(r);  // uneven blocks
  const std::size_t mine = counts[r_];
  std::vector<std::int32_t> send(mine);
  for (std::size_t j = 0; j < mine; ++j) send[j] = r_ * 1000000 + static_cast<std::int32_t>(j);
  const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
  std::vector<std::int32_t> recv(total, -1);
  comm_->allgatherv(send.data(), mine, recv.data(), counts, DataType::kInt32,
                    TrafficKind::kParameter);
  std::size_t at = 0;
  for (int r = 0; r < n_; ++r) {
    for (std::size_t j = 0; j < counts[r]; ++j, ++at) {
      ASSERT_EQ(recv[at], r * 1000000 + static_cast<std::int32_t>(j));
    }
  }
  const auto c = comm_->counters()[TrafficKind::kParameter];
  EXPECT_EQ(c.sent_bytes, static_cast<std::uint64_t>(n_ - 1) * mine * 4);
  EXPECT_EQ(c.received_bytes, (total - mine) * 4);
}

TEST_P(CommTest, BroadcastFromTheLastRank) {
  const std::size_t count = GetParam();
  const int root = n_ - 1;
  std::vector<double> buf(count, r_ == root ? 0.0 : -1.0);
  if (r_ == root) std::iota(buf.begin(), buf.end(), 0.5);
  comm_->broadcast(buf.data(), count, DataType::kFloat64, root, TrafficKind::kControl);
  for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(buf[i], static_cast<double>(i) + 0.5);
  const auto c = comm_->counters()[TrafficKind::kControl];
  if (r_ == root) {
    EXPECT_EQ(c.sent_bytes, static_cast<std::uint64_t>(n_ - 1) * count * 8);
    EXPECT_EQ(c.received_bytes, 0u);
  } else {
    EXPECT_EQ(c.sent_bytes, 0u);
    EXPECT_EQ(c.received_bytes, count * 8);
  }
}

INSTANTIATE_TEST_SUITE_P(Counts, CommTest, ::testing::Values(0, 1, 7, 1000, 1000003),
                         [](const auto& info) { return "n" + std::to_string(info.param); });

TEST(Comm, AsyncOperationsCompleteIndependently) {
  CountingCommunicator comm(make_mpi_world_communicator());
  const int n = comm.size();
  std::vector<float> a(4096, 1.0f);
  std::vector<std::int64_t> b(3, comm.rank());
  WorkHandle wa = comm.allreduce_async(a.data(), a.size(), DataType::kFloat32, ReduceOp::kSum,
                                       TrafficKind::kGradient);
  WorkHandle wb = comm.allreduce_async(b.data(), b.size(), DataType::kInt64, ReduceOp::kMax,
                                       TrafficKind::kControl);
  wb->wait();
  wa->wait();
  wa->wait();  // a second wait returns at once
  for (float v : a) ASSERT_EQ(v, static_cast<float>(n));
  for (auto v : b) ASSERT_EQ(v, n - 1);
  std::int64_t lowest = comm.rank() + 10;
  comm.allreduce(&lowest, 1, DataType::kInt64, ReduceOp::kMin, TrafficKind::kControl);
  EXPECT_EQ(lowest, 10);
}

// The async forms go through MPI's non-blocking collectives, a different path from the blocking
// forms above: the same results and the same counts.
TEST(Comm, AsyncAllgathervAndBroadcastMatchTheBlockingForms) {
  CountingCommunicator comm(make_mpi_world_communicator());
  const int n = comm.size(), r = comm.rank();
  std::vector<std::size_t> counts(n);
  for (int i = 0; i < n; ++i) counts[i] = static_cast<std::size_t>(2 * i + 1);
  std::vector<float> send(counts[r], static_cast<float>(r));
  std::vector<float> recv(static_cast<std::size_t>(n) * n, -1.0f);  // sum of 2i+1 is n^2
  std::vector<std::int64_t> bcast(5, r == 1 % n ? 77 : 0);
  WorkHandle g = comm.allgatherv_async(send.data(), send.size(), recv.data(), counts,
                                       DataType::kFloat32, TrafficKind::kParameter);
  WorkHandle b = comm.broadcast_async(bcast.data(), bcast.size(), DataType::kInt64, 1 % n,
                                      TrafficKind::kControl);
  g->wait();
  b->wait();
  std::size_t at = 0;
  for (int i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < counts[i]; ++j) ASSERT_EQ(recv[at++], static_cast<float>(i));
  }
  for (auto v : bcast) EXPECT_EQ(v, 77);
  const auto c = comm.counters();
  EXPECT_EQ(c[TrafficKind::kParameter].sent_bytes,
            static_cast<std::uint64_t>(n - 1) * counts[r] * 4);
  EXPECT_EQ(c[TrafficKind::kParameter].received_bytes,
            (static_cast<std::uint64_t>(n) * n - counts[r]) * 4);
  EXPECT_EQ(c[TrafficKind::kControl].received_bytes, r == 1 % n ? 0u : 40u);
}

TEST(Comm, BadArgumentsAreErrorsBeforeAnythingIsSent) {
  CountingCommunicator comm(make_mpi_world_communicator());
  float x = 0;
  EXPECT_THROW(comm.broadcast(&x, 1, DataType::kFloat32, comm.size(), TrafficKind::kControl),
               CommError);
  EXPECT_THROW(comm.allgatherv(&x, 1, &x, std::vector<std::size_t>(comm.size() + 1, 1),
                               DataType::kFloat32, TrafficKind::kControl),
               CommError);
  std::vector<float> out(comm.size() * 2);
  EXPECT_THROW(comm.allgatherv(&x, 1, out.data(), std::vector<std::size_t>(comm.size(), 2),
                               DataType::kFloat32, TrafficKind::kControl),
               CommError);
  EXPECT_THROW(comm.allreduce(&x, 1, DataType::kFloat16, ReduceOp::kSum, TrafficKind::kGradient),
               CommError);
  EXPECT_THROW(comm.broadcast_async(&x, 1, DataType::kFloat32, -1, TrafficKind::kControl),
               CommError);
  EXPECT_THROW(comm.allgatherv_async(&x, 1, &x, {}, DataType::kFloat32, TrafficKind::kControl),
               CommError);
  EXPECT_THROW(
      comm.allreduce_async(&x, 1, DataType::kFloat16, ReduceOp::kSum, TrafficKind::kGradient),
      CommError);
  // Nothing was sent, and the ranks are still in step.
  EXPECT_EQ(comm.counters().total_sent(), 0u);
  comm.barrier();
}

}  // namespace
}  // namespace gw
