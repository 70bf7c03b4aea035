// StagingCommunicator in one process, over a communicator that records what reaches it: host
// collectives pass through as they are, async forms included (Note [Staging device buffers]).
// Device buffers and a stream the inputs are ready on are comm_gpu_test's (MpiStagingGpu).
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "kernels/device.h"
#include "kernels/stream.h"
#include "plugin/comm/staging_communicator.h"

namespace gw {
namespace {

// A communicator of 2 ranks seen from rank 0 that does nothing but remember the last collective
// it was given, and whether it came through start or run.
class RecordingCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  WorkHandle start(const Collective& c) override {
    last = c;
    ++starts;
    return completed_work();
  }
  void run(const Collective& c) override {
    last = c;
    ++runs;
  }
  void barrier() override { ++barriers; }

  Collective last;
  int starts = 0, runs = 0, barriers = 0;
};

TEST(StagingCommunicator, HostCollectivesPassThroughAsTheyAre) {
  auto recording = std::make_unique<RecordingCommunicator>();
  RecordingCommunicator& inner = *recording;
  StagingCommunicator staging(std::move(recording));
  EXPECT_EQ(&staging.inner(), &inner);
  std::vector<float> send(3, 1.0f), recv(5, 0.0f);

  staging
      .allreduce_async(send.data(), 3, DataType::kFloat32, ReduceOp::kMax, TrafficKind::kGradient)
      ->wait();
  EXPECT_EQ(inner.starts, 1);  // the async form stays async: no staging, no wait here
  EXPECT_EQ(inner.last.op, CollectiveOp::kAllreduce);
  EXPECT_EQ(inner.last.recv, send.data());
  EXPECT_EQ(inner.last.reduce, ReduceOp::kMax);

  staging.allgatherv(send.data(), 3, recv.data(), {3, 2}, DataType::kFloat32,
                     TrafficKind::kControl);
  EXPECT_EQ(inner.runs, 1);  // the blocking form stays the wrapped one's blocking form
  EXPECT_EQ(inner.last.send, send.data());
  EXPECT_EQ(inner.last.recv, recv.data());
  EXPECT_EQ(inner.last.recv_counts, (std::vector<std::size_t>{3, 2}));

  // Ready on the host stream: host memory, asked about nothing, passed on with its stream.
  const kernels::Stream host = kernels::Stream::host();
  Collective c =
      Collective::broadcast(recv.data(), 5, DataType::kFloat32, 1, TrafficKind::kParameter);
  c.ready_on = &host;
  staging.run(c);
  EXPECT_EQ(inner.runs, 2);
  EXPECT_EQ(inner.last.recv, recv.data());
  EXPECT_EQ(inner.last.root, 1);
  EXPECT_EQ(inner.last.ready_on, &host);

  staging.barrier();
  EXPECT_EQ(inner.barriers, 1);
}

TEST(StagingCommunicator, IsMadeWhereCudaIsUsableOnly) {
  auto recording = std::make_unique<RecordingCommunicator>();
  const Communicator* inner = recording.get();
  const std::unique_ptr<Communicator> made = with_device_staging(std::move(recording));
  const auto* staging = dynamic_cast<const StagingCommunicator*>(made.get());
  if (kernels::cuda_device_available()) {
    ASSERT_NE(staging, nullptr);
    EXPECT_EQ(&staging->inner(), inner);
  } else {
    EXPECT_EQ(made.get(), inner);
  }
  EXPECT_THROW(StagingCommunicator(nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace gw
