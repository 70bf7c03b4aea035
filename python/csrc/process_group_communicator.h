// A gw::Communicator over a PyTorch process group (c10d): the collectives gradwire's exchange
// runs (plugin/exchange/), carried by the group the training program already uses (Gloo on CPUs,
// NCCL on GPUs), so a DDP communication hook can run gradwire's compressors without MPI.
//
// Note [Collectives on a process group]
// Each collective wraps gradwire's buffers in tensors without a copy (at::from_blob on the
// group's device) and waits for the group's Work before it returns: the hook runs a bucket's
// exchange to its end on the calling thread. allreduce and broadcast map onto the group's own;
// alltoallv is alltoall_base with split sizes; allgatherv, which c10d has only for equal sizes,
// sends every block padded to the largest count (the counts are every rank's already) and packs
// the blocks after. Errors from the group (a peer gone, a timeout) become gw::CommError naming
// the operation and the rank, what the exchange's callers expect.
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "plugin/comm/communicator.h"

namespace gw::torch_bridge {

class ProcessGroupCommunicator final : public Communicator {
 public:
  // Buffers live on `device` (the CPU for Gloo; a CUDA device for NCCL).
  ProcessGroupCommunicator(c10::intrusive_ptr<c10d::ProcessGroup> group, c10::Device device);

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  WorkHandle start(const Collective& c) override;
  void barrier() override;

 private:
  void allgatherv(const Collective& c);
  c10::intrusive_ptr<c10d::ProcessGroup> group_;
  c10::Device device_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace gw::torch_bridge
