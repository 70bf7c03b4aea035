// The NCCL backend of Communicator: NCCL collectives between CUDA device buffers, one rank per
// GPU, on a CUDA stream the communicator is given. Built only with CUDA and NCCL; other code makes
// one through make_nccl_communicator.h. Errors (NCCL's, and arguments NCCL cannot carry) are
// CommErrors naming the operation and the rank.
#pragma once

#include <mpi.h>

#include <string>

#include "kernels/stream.h"
#include "plugin/comm/communicator.h"

struct ncclComm;  // nccl.h's ncclComm_t is a struct ncclComm*; nccl.h stays out of this header

namespace gw {

class NcclCommunicator : public Communicator {
 public:
  // Collective over `comm`: rank 0 makes NCCL's unique id, MPI broadcasts it, and every rank joins
  // with ncclCommInitRank on `stream`'s device. `comm` is used only here. Throws CommError for a
  // host stream or a failed setup.
  NcclCommunicator(MPI_Comm comm, kernels::Stream stream);
  // Waits for the stream, then ncclCommDestroy (ncclCommAbort after an asynchronous error). Wait
  // for (or destroy) every Work it returned first.
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  // Buffers must be device memory on the stream's device (else CommError); the operations are
  // enqueued on the stream in call order (Note [NCCL work and its errors]), after the work so far
  // of the stream the collective's inputs are ready on, where it names one.
  WorkHandle start(const Collective& c) override;
  // A one-element NCCL allreduce, waited for: returns when every rank reached it and this rank's
  // earlier collectives have completed.
  void barrier() override;

  const kernels::Stream& stream() const { return stream_; }

 private:
  void check_device(const std::string& what, int device) const;  // device -1: host memory
  void check_buffers(const Collective& c) const;
  WorkHandle finish(const char* what);  // records the Work's event after an enqueued operation

  kernels::Stream stream_;
  ncclComm* comm_ = nullptr;
  int rank_ = 0;
  int size_ = 1;
  kernels::Buffer<int> barrier_word_;
  kernels::Event inputs_ready_;  // recorded on a collective's ready_on stream
};

}  // namespace gw
