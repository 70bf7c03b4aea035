// Communicators on CUDA device buffers, under a real mpirun: the NCCL backend (1 rank, and 2 ranks
// when there are two GPUs, one per rank), and the MPI backend's staging through pinned host memory
// (Note [Staging device buffers]) at 1 and 2 ranks, the 2 ranks sharing one GPU. Exact closed-form
// results (rank r fills with r: the sum is n(n-1)/2), and the counting decorator's bytes equal to
// Note [What the counters count], whatever the backend; and collectives given the stream their
// inputs are ready on, called before that stream's work has run. Every test skips where it cannot
// run (no GPU, no NCCL in this build, fewer GPUs than ranks for NCCL); CTest shows a run where all
// skipped as skipped (Note "Skipped is not passed").
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "kernels/device.h"
#include "kernels/stream.h"
#include "plugin/comm/counting_communicator.h"
#include "plugin/comm/mpi/mpi_communicator.h"
#include "plugin/comm/mpi/mpi_runtime.h"
#include "plugin/comm/nccl/make_nccl_communicator.h"
#include "plugin/comm/world_communicator.h"
#include "plugin/config/config.h"
#include "plugin/config/params.h"

namespace gw {
namespace {

// A device copy of host values on `stream`'s device, and back.
template <class T>
class DeviceVector {
 public:
  DeviceVector(const std::vector<T>& host, const kernels::Stream& stream)
      : stream_(stream), buffer_(host.size(), stream) {
    kernels::copy_bytes(buffer_.data(), host.data(), host.size() * sizeof(T), stream_);
    stream_.synchronize();
  }
  T* data() { return buffer_.data(); }
  std::vector<T> to_host() const {
    std::vector<T> out(buffer_.size());
    kernels::copy_bytes(out.data(), buffer_.data(), out.size() * sizeof(T), stream_);
    stream_.synchronize();
    return out;
  }

 private:
  kernels::Stream stream_;
  kernels::Buffer<T> buffer_;
};

// float16 bits of small integers (exact in binary16).
std::uint16_t half_bits(int v) {
  switch (v) {
    case 0:
      return 0x0000;
    case 1:
      return 0x3C00;
    case 2:
      return 0x4000;
    case 3:
      return 0x4200;
    case 4:
      return 0x4400;
    case 5:
      return 0x4500;
    case 6:
      return 0x4600;
  }
  ADD_FAILURE() << "half_bits: no table entry for " << v;
  return 0;
}

std::uint64_t expected_allreduce_bytes(std::size_t count, std::size_t elem, int r, int n) {
  if (n == 1) return 0;
  std::vector<std::uint64_t> chunk(n, count / n);
  for (std::size_t i = 0; i < count % n; ++i) ++chunk[i];
  return ((count - chunk[r]) + (n - 1) * chunk[r]) * elem;
}

int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

// The collectives every backend must carry on device buffers, checked exactly; `device` is the
// CUDA device the buffers live on.
void check_collectives_on_device(CountingCommunicator& comm, int device) {
  const int n = comm.size();
  const int r = comm.rank();
  const kernels::Stream stream = kernels::Stream::cuda(device);
  for (const std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{1000}}) {
    SCOPED_TRACE("count " + std::to_string(count));
    comm.reset();
    // allreduce: sum, max, min of float32; sum of int64 and float16.
    std::vector<float> values(count);
    for (std::size_t i = 0; i < count; ++i)
      values[i] = static_cast<float>(r + static_cast<int>(i % 3));
    DeviceVector<float> sum(values, stream), max(values, stream), min(values, stream);
    comm.allreduce(sum.data(), count, DataType::kFloat32, ReduceOp::kSum, TrafficKind::kGradient);
    comm.allreduce_async(max.data(), count, DataType::kFloat32, ReduceOp::kMax,
                         TrafficKind::kGradient)
        ->wait();
    comm.allreduce(min.data(), count, DataType::kFloat32, ReduceOp::kMin, TrafficKind::kGradient);
    const std::vector<float> got_sum = sum.to_host(), got_max = max.to_host(),
                             got_min = min.to_host();
    for (std::size_t i = 0; i < count; ++i) {
      const int k = static_cast<int>(i % 3);
      ASSERT_EQ(got_sum[i], static_cast<float>(n * (n - 1) / 2 + n * k)) << "sum at " << i;
      ASSERT_EQ(got_max[i], static_cast<float>(n - 1 + k)) << "max at " << i;
      ASSERT_EQ(got_min[i], static_cast<float>(k)) << "min at " << i;
    }
    std::vector<std::int64_t> ints(count);
    for (std::size_t i = 0; i < count; ++i)
      ints[i] = (std::int64_t{1} << 40) * r + static_cast<std::int64_t>(i);
    DeviceVector<std::int64_t> int_sum(ints, stream);
    comm.allreduce(int_sum.data(), count, DataType::kInt64, ReduceOp::kSum, TrafficKind::kControl);
    const std::vector<std::int64_t> got_ints = int_sum.to_host();
    for (std::size_t i = 0; i < count; ++i) {
      ASSERT_EQ(got_ints[i],
                (std::int64_t{1} << 40) * (n * (n - 1) / 2) + n * static_cast<std::int64_t>(i))
          << "int64 sum at " << i;
    }
    DeviceVector<std::uint16_t> halves(std::vector<std::uint16_t>(count, half_bits(r + 1)), stream);
    comm.allreduce(halves.data(), count, DataType::kFloat16, ReduceOp::kSum,
                   TrafficKind::kGradient);
    const std::vector<std::uint16_t> got_halves = halves.to_host();
    for (std::size_t i = 0; i < count; ++i) {
      ASSERT_EQ(got_halves[i], half_bits(n * (n + 1) / 2)) << "float16 sum at " << i;
    }
    // Counted by count x element size, whatever carried it.
    const TrafficCounters c = comm.counters();
    const std::uint64_t f32 = expected_allreduce_bytes(count, 4, r, n);
    const std::uint64_t f16 = expected_allreduce_bytes(count, 2, r, n);
    EXPECT_EQ(c[TrafficKind::kGradient].sent_bytes, 3 * f32 + f16);
    EXPECT_EQ(c[TrafficKind::kGradient].received_bytes, 3 * f32 + f16);
    EXPECT_EQ(c[TrafficKind::kGradient].calls, 4u);
    EXPECT_EQ(c[TrafficKind::kControl].sent_bytes, expected_allreduce_bytes(count, 8, r, n));

    // broadcast from the last rank.
    comm.reset();
    const int root = n - 1;
    std::vector<float> mine(count, static_cast<float>(-1));
    if (r == root) std::iota(mine.begin(), mine.end(), 10.0f);
    DeviceVector<float> bcast(mine, stream);
    comm.broadcast_async(bcast.data(), count, DataType::kFloat32, root, TrafficKind::kParameter)
        ->wait();
    const std::vector<float> got_bcast = bcast.to_host();
    for (std::size_t i = 0; i < count; ++i) {
      ASSERT_EQ(got_bcast[i], 10.0f + static_cast<float>(i)) << "broadcast at " << i;
    }
    const std::uint64_t bytes = count * 4;
    EXPECT_EQ(comm.counters()[TrafficKind::kParameter].sent_bytes,
              r == root ? bytes * static_cast<std::uint64_t>(n - 1) : 0);
    EXPECT_EQ(comm.counters()[TrafficKind::kParameter].received_bytes, r == root ? 0 : bytes);
  }

  // allgatherv: rank q sends q + 2 elements 100 q + i (sizes differ across ranks).
  comm.reset();
  std::vector<std::size_t> counts(static_cast<std::size_t>(n));
  for (int q = 0; q < n; ++q) counts[static_cast<std::size_t>(q)] = static_cast<std::size_t>(q) + 2;
  const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
  std::vector<std::int32_t> send(counts[static_cast<std::size_t>(r)]);
  for (std::size_t i = 0; i < send.size(); ++i) send[i] = 100 * r + static_cast<std::int32_t>(i);
  std::vector<std::int32_t> expected;
  for (int q = 0; q < n; ++q) {
    for (std::size_t i = 0; i < counts[static_cast<std::size_t>(q)]; ++i) {
      expected.push_back(100 * q + static_cast<std::int32_t>(i));
    }
  }
  DeviceVector<std::int32_t> send_d(send, stream);
  DeviceVector<std::int32_t> recv_d(std::vector<std::int32_t>(total, -7), stream);
  comm.allgatherv(send_d.data(), send.size(), recv_d.data(), counts, DataType::kInt32,
                  TrafficKind::kGradient);
  EXPECT_EQ(recv_d.to_host(), expected);
  DeviceVector<std::int32_t> recv_async(std::vector<std::int32_t>(total, -7), stream);
  comm.allgatherv_async(send_d.data(), send.size(), recv_async.data(), counts, DataType::kInt32,
                        TrafficKind::kGradient)
      ->wait();
  EXPECT_EQ(recv_async.to_host(), expected);
  const TrafficCounters c = comm.counters();
  EXPECT_EQ(c[TrafficKind::kGradient].sent_bytes,
            2 * static_cast<std::uint64_t>(n - 1) * send.size() * 4);
  EXPECT_EQ(c[TrafficKind::kGradient].received_bytes, 2 * (total - send.size()) * 4);

  // alltoallv: rank s sends rank q (s + 2q) % 3 elements 1000 s + 100 q + i (zero-element blocks
  // included, and what s sends q differs from what q sends s).
  comm.reset();
  const auto block = [](int from, int to) { return static_cast<std::size_t>((from + 2 * to) % 3); };
  std::vector<std::size_t> send_counts(static_cast<std::size_t>(n));
  std::vector<std::size_t> recv_counts(static_cast<std::size_t>(n));
  std::vector<std::int32_t> to_send, from_each;
  std::uint64_t sent = 0, received = 0;
  for (int q = 0; q < n; ++q) {
    const auto qi = static_cast<std::size_t>(q);
    send_counts[qi] = block(r, q);
    recv_counts[qi] = block(q, r);
    for (std::size_t i = 0; i < send_counts[qi]; ++i) {
      to_send.push_back(1000 * r + 100 * q + static_cast<std::int32_t>(i));
    }
    for (std::size_t i = 0; i < recv_counts[qi]; ++i) {
      from_each.push_back(1000 * q + 100 * r + static_cast<std::int32_t>(i));
    }
    if (q != r) {
      sent += send_counts[qi] * 4;
      received += recv_counts[qi] * 4;
    }
  }
  // A rank may send or receive nothing at all; the buffers stay allocated (one element) so that a
  // routed communicator sees device pointers on every rank.
  DeviceVector<std::int32_t> a2a_send(to_send.empty() ? std::vector<std::int32_t>{0} : to_send,
                                      stream);
  const std::vector<std::int32_t> unset(std::max<std::size_t>(from_each.size(), 1), -7);
  DeviceVector<std::int32_t> a2a_recv(unset, stream), a2a_recv_async(unset, stream);
  comm.alltoallv(a2a_send.data(), send_counts, a2a_recv.data(), recv_counts, DataType::kInt32,
                 TrafficKind::kGradient);
  comm.alltoallv_async(a2a_send.data(), send_counts, a2a_recv_async.data(), recv_counts,
                       DataType::kInt32, TrafficKind::kGradient)
      ->wait();
  std::vector<std::int32_t> got = a2a_recv.to_host(), got_async = a2a_recv_async.to_host();
  got.resize(from_each.size());
  got_async.resize(from_each.size());
  EXPECT_EQ(got, from_each);
  EXPECT_EQ(got_async, from_each);
  const TrafficCounters a2a = comm.counters();
  EXPECT_EQ(a2a[TrafficKind::kGradient].sent_bytes, 2 * sent);
  EXPECT_EQ(a2a[TrafficKind::kGradient].received_bytes, 2 * received);
  EXPECT_EQ(a2a[TrafficKind::kGradient].calls, 2u);
  comm.barrier();
}

// Collectives given the stream their inputs are ready on (Note [A collective described once]),
// with that stream's work still running when they are called: the inputs are written by a copy
// enqueued behind a long queue of fills, and nobody synchronises before the collective. A layer
// that read the buffers before that stream's work had run would see the stale values.
void check_inputs_ready_on_a_stream(Communicator& comm, int device) {
  const int n = comm.size();
  const int r = comm.rank();
  const kernels::Stream stream = kernels::Stream::cuda(device);
  const std::size_t count = 1000;
  const std::vector<float> stale(count, -1000.0f);
  std::vector<float> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = static_cast<float>(r + static_cast<int>(i));
  DeviceVector<float> truth(values, stream), buffer(stale, stream);
  const std::vector<std::size_t> counts(static_cast<std::size_t>(n), count);
  DeviceVector<float> gathered(std::vector<float>(count * static_cast<std::size_t>(n), -1.0f),
                               stream);
  kernels::Buffer<unsigned char> busy(std::size_t{256} << 20, stream);
  const auto write_late = [&] {
    for (int i = 0; i < 40; ++i) kernels::fill_zero(busy.data(), busy.size(), stream);
    kernels::copy_bytes(buffer.data(), truth.data(), count * sizeof(float), stream);
  };

  write_late();
  Collective sum = Collective::allreduce(buffer.data(), count, DataType::kFloat32, ReduceOp::kSum,
                                         TrafficKind::kGradient);
  sum.ready_on = &stream;
  comm.run(sum);
  const std::vector<float> got_sum = buffer.to_host();
  for (std::size_t i = 0; i < count; ++i) {
    ASSERT_EQ(got_sum[i], static_cast<float>(n * (n - 1) / 2 + n * static_cast<int>(i)))
        << "sum at " << i;
  }

  DeviceVector<float> reset(stale, stream);
  kernels::copy_bytes(buffer.data(), reset.data(), count * sizeof(float), stream);
  write_late();
  Collective gather = Collective::allgatherv(buffer.data(), count, gathered.data(), counts,
                                             DataType::kFloat32, TrafficKind::kGradient);
  gather.ready_on = &stream;
  comm.start(gather)->wait();
  const std::vector<float> got_all = gathered.to_host();
  for (int q = 0; q < n; ++q) {
    for (std::size_t i = 0; i < count; ++i) {
      ASSERT_EQ(got_all[static_cast<std::size_t>(q) * count + i],
                static_cast<float>(q + static_cast<int>(i)))
          << "rank " << q << "'s block at " << i;
    }
  }
  comm.barrier();
}

bool skip_without_device(std::string* why) {
  if (!kernels::cuda_device_available()) {
    *why = "no CUDA device: the communicators' device paths are built but cannot run here";
    return true;
  }
  return false;
}

// --- NCCL ----------------------------------------------------------------------------------------

class NcclGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (skip_without_device(&why)) GTEST_SKIP() << why;
    if (!nccl_built()) GTEST_SKIP() << "this build has no NCCL";
    if (kernels::cuda_device_count() < world_size()) {
      GTEST_SKIP() << "NCCL needs a GPU per rank: " << world_size() << " ranks, "
                   << kernels::cuda_device_count() << " GPUs";
    }
    device_ = world_rank();
    comm_ = std::make_unique<CountingCommunicator>(
        make_nccl_communicator(MPI_COMM_WORLD, kernels::Stream::cuda(device_)));
  }
  int device_ = 0;
  std::unique_ptr<CountingCommunicator> comm_;
};

TEST_F(NcclGpu, CollectivesOnDeviceBuffersAreExactAndCounted) {
  check_collectives_on_device(*comm_, device_);
}

TEST_F(NcclGpu, WaitsForTheStreamItsInputsAreReadyOn) {
  check_inputs_ready_on_a_stream(*comm_, device_);
}

TEST_F(NcclGpu, HostBufferIsAClearErrorNamingTheOperation) {
  std::vector<float> host(4, 1.0f);
  try {
    comm_->allreduce(host.data(), host.size(), DataType::kFloat32, ReduceOp::kSum,
                     TrafficKind::kGradient);
    FAIL() << "a host buffer was accepted";
  } catch (const CommError& e) {
    EXPECT_EQ(std::string(e.what()),
              "NCCL allreduce on rank " + std::to_string(comm_->rank()) +
                  ": the buffer is host memory, and NCCL moves CUDA device memory only (the MPI "
                  "backend, GRADWIRE_BACKEND=mpi, carries host buffers)");
  }
  EXPECT_EQ(comm_->counters()[TrafficKind::kGradient].calls, 0u);  // refused: not counted
}

TEST_F(NcclGpu, AnUnknownDataTypeIsAClearError) {
  const kernels::Stream stream = kernels::Stream::cuda(device_);
  DeviceVector<float> buffer(std::vector<float>(4, 1.0f), stream);
  try {
    comm_->allreduce(buffer.data(), 4, static_cast<DataType>(42), ReduceOp::kSum,
                     TrafficKind::kGradient);
    FAIL() << "data type 42 was accepted";
  } catch (const CommError& e) {
    EXPECT_EQ(std::string(e.what()),
              "NCCL allreduce on rank " + std::to_string(comm_->rank()) +
                  ": data type 42 is not one NCCL carries (accepted: uint8, int32, int64, "
                  "float16, float32, float64)");
  }
}

// Note [Host buffers beside NCCL]: the world communicator a program gets under NCCL carries its
// host control messages by MPI, and its device buffers by NCCL still.
TEST_F(NcclGpu, WorldCommunicatorCarriesHostControlMessagesBesideNccl) {
  config::Config config;
  config.set(config::keys::kBackend, "nccl");
  BackendChoice chosen;
  CountingCommunicator world(make_world_communicator(config, Device::kCuda, device_, &chosen));
  ASSERT_EQ(chosen.backend, Backend::kNccl) << chosen.reason;
  std::vector<float> host(4, 1.0f);
  world.allreduce(host.data(), host.size(), DataType::kFloat32, ReduceOp::kSum,
                  TrafficKind::kControl);
  for (float v : host) EXPECT_EQ(v, static_cast<float>(world_size()));
  std::vector<std::int32_t> ranks(world_size(), -1);
  const std::int32_t mine = world.rank();
  world.allgatherv(&mine, 1, ranks.data(), std::vector<std::size_t>(world_size(), 1),
                   DataType::kInt32, TrafficKind::kControl);
  for (int r = 0; r < world_size(); ++r) EXPECT_EQ(ranks[r], r);
  world.barrier();
  check_collectives_on_device(world, device_);
  check_inputs_ready_on_a_stream(world, device_);  // routed by the stream, to NCCL
}

TEST_F(NcclGpu, ZeroElementsAreAcceptedFromAnyPointer) {
  comm_->allreduce(nullptr, 0, DataType::kFloat32, ReduceOp::kSum, TrafficKind::kGradient);
  comm_->broadcast(nullptr, 0, DataType::kFloat32, 0, TrafficKind::kGradient);
}

// --- MPI staging ---------------------------------------------------------------------------------

class MpiStagingGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (skip_without_device(&why)) GTEST_SKIP() << why;
    device_ = world_rank() % kernels::cuda_device_count();  // ranks may share a GPU
    comm_ = std::make_unique<CountingCommunicator>(make_mpi_world_communicator());
  }
  int device_ = 0;
  std::unique_ptr<CountingCommunicator> comm_;
};

TEST_F(MpiStagingGpu, CollectivesOnDeviceBuffersAreExactAndCounted) {
  check_collectives_on_device(*comm_, device_);
}

// Note [Staging device buffers]: given the stream the inputs are ready on, the stager copies them
// in after that stream's work so far, without the caller synchronising it.
TEST_F(MpiStagingGpu, StagedCollectivesWaitForTheStreamTheirInputsAreReadyOn) {
  check_inputs_ready_on_a_stream(*comm_, device_);
}

// MpiCommunicator knows host memory only: a collective ready on a CUDA stream is refused, before
// anything is sent, with a pointer to the stager.
TEST_F(MpiStagingGpu, BareMpiRefusesACollectiveReadyOnACudaStream) {
  MpiCommunicator bare(MPI_COMM_WORLD);
  const kernels::Stream stream = kernels::Stream::cuda(device_);
  DeviceVector<float> buffer(std::vector<float>(4, 1.0f), stream);
  Collective c = Collective::allreduce(buffer.data(), 4, DataType::kFloat32, ReduceOp::kSum,
                                       TrafficKind::kGradient);
  c.ready_on = &stream;
  try {
    bare.run(c);
    FAIL() << "a collective ready on a CUDA stream was accepted";
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("allreduce on rank " + std::to_string(bare.rank()) +
                                         ": the buffers are on a CUDA stream"),
              std::string::npos)
        << e.what();
  }
  bare.barrier();  // nothing was sent: the ranks are still in step
}

// Either side of an allgatherv may be host memory while the other is on the device.
TEST_F(MpiStagingGpu, AllgathervMixesHostAndDeviceBuffers) {
  const int n = comm_->size();
  const int r = comm_->rank();
  const kernels::Stream stream = kernels::Stream::cuda(device_);
  std::vector<std::size_t> counts(static_cast<std::size_t>(n), 3);
  const std::vector<float> send(3, static_cast<float>(r));
  std::vector<float> expected;
  for (int q = 0; q < n; ++q) expected.insert(expected.end(), 3, static_cast<float>(q));
  std::vector<float> host_recv(expected.size(), -1.0f);
  DeviceVector<float> send_d(send, stream);
  comm_->allgatherv(send_d.data(), 3, host_recv.data(), counts, DataType::kFloat32,
                    TrafficKind::kGradient);
  EXPECT_EQ(host_recv, expected);
  DeviceVector<float> recv_d(std::vector<float>(expected.size(), -1.0f), stream);
  comm_->allgatherv(send.data(), 3, recv_d.data(), counts, DataType::kFloat32,
                    TrafficKind::kGradient);
  EXPECT_EQ(recv_d.to_host(), expected);
}

}  // namespace
}  // namespace gw
