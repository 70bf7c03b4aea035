// A Communicator decorator that lets a communicator of host memory (MpiCommunicator) carry CUDA
// device buffers, by copying them through pinned host memory (Note [Staging device buffers] in
// staging_communicator.cc). Collectives on host buffers pass through untouched.
#pragma once

#include <memory>
#include <vector>

#include "kernels/stream.h"
#include "plugin/comm/communicator.h"

namespace gw {

class StagingCommunicator final : public Communicator {
 public:
  // Throws std::invalid_argument for a null communicator.
  explicit StagingCommunicator(std::unique_ptr<Communicator> host);

  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  std::vector<int> node_of_rank() const override { return host_->node_of_rank(); }
  // The wrapped communicator's levels as they are: a two-level world stages each level itself
  // (make_hierarchical_mpi_communicator), so its levels take device buffers too.
  const Levels* levels() override { return host_->levels(); }

  // A collective with a buffer on a CUDA device runs staged and blocking: start returns a
  // completed Work. Any other is the wrapped communicator's, as it is.
  WorkHandle start(const Collective& c) override;
  void run(const Collective& c) override;
  void barrier() override { host_->barrier(); }

  const Communicator& inner() const { return *host_; }

 private:
  // The CUDA device of a collective's send and receive buffers, -1 for host memory.
  struct Placement {
    int send_device = -1;
    int recv_device = -1;
    bool staged() const { return send_device >= 0 || recv_device >= 0; }
  };
  class Trip;  // one collective's way through pinned memory (staging_communicator.cc)

  Placement locate(const Collective& c) const;
  void run_staged(const Collective& c, const Placement& where);
  const kernels::Stream& copy_stream(int device);

  std::unique_ptr<Communicator> host_;
  bool cuda_usable_ = false;  // asked once: without a device, every buffer is host memory
  // Made and grown on first use, never shrunk: a steady state allocates nothing.
  kernels::PinnedBuffer<unsigned char> pinned_;
  kernels::Stream copy_stream_ = kernels::Stream::host();  // on the last staged buffer's device
  kernels::Event inputs_ready_;  // recorded on a collective's ready_on stream
  bool in_trip_ = false;         // the pinned buffer serves one collective at a time
};

// `host` wrapped in a StagingCommunicator where a CUDA device is usable, else `host` itself: what
// the factories put over every MpiCommunicator they make.
std::unique_ptr<Communicator> with_device_staging(std::unique_ptr<Communicator> host);

}  // namespace gw
