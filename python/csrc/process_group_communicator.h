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
//
// On a CUDA group (NCCL moves device memory only) a collective whose buffers are in host memory
// (the configuration check, the sparse part's message counts: Note [Host buffers beside NCCL])
// goes through device copies of them: the group's one backend carries both, in one order, and the
// copy back waits for the collective. Device buffers are used in place; a Collective's ready_on
// says which it is without asking CUDA, else kernels::device_of does.
//
// Streams: the group orders its collective after the caller's current stream and, on wait(), the
// current stream after the collective (c10d's own rule). The hook makes gradwire's stream the
// current one while it runs a bucket (python/gradwire/torch.py), so the compressor's kernels,
// the collectives and the decode are one stream's order.
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "kernels/stream.h"
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
  // The caller makes `stream` the current CUDA stream around every collective it starts here
  // (the hook does: Note [The DDP hook on a GPU]), so collectives ready on it are ordered on it
  // (Note [Collectives ordered on a stream]). `stream` must outlive this communicator.
  void order_on(const kernels::Stream& stream) { ordered_ = &stream; }
  bool orders_on(const kernels::Stream& stream) const override {
    return ordered_ != nullptr && *ordered_ == stream && !stream.is_host();
  }

 private:
  WorkHandle run_on_device(const Collective& c);
  void allgatherv(const Collective& c);
  // Whether `c`'s buffers are host memory to be staged through device copies: on a CUDA group
  // only.
  bool staged(const Collective& c) const;
  c10::intrusive_ptr<c10d::ProcessGroup> group_;
  c10::Device device_;
  const kernels::Stream* ordered_ = nullptr;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace gw::torch_bridge
