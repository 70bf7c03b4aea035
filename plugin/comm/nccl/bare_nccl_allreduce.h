// A bare ncclAllReduce, the baseline gradwire_bench_allreduce --device cuda holds gradwire's NCCL
// communicator against: an NCCL communicator of its own and nothing between the caller and NCCL
// (no argument checks, no byte counters, no polling for asynchronous errors). Benchmark support,
// not a Communicator; here because nccl.h stays in plugin/comm/nccl/ (tests/integration/
// layering.sh). Declared in every build: without NCCL the constructor throws CommError.
#pragma once

#include <mpi.h>

#include <cstddef>

#include "kernels/stream.h"
#include "plugin/comm/communicator.h"

struct ncclComm;  // nccl.h's ncclComm_t; nccl.h stays out of this header

namespace gw {

class BareNcclAllreduce {
 public:
  // Collective over `comm`: rank 0's unique id broadcast over MPI, then ncclCommInitRank on
  // `stream`'s device (a CUDA stream; a host stream is a CommError).
  BareNcclAllreduce(MPI_Comm comm, const kernels::Stream& stream);
  ~BareNcclAllreduce();
  BareNcclAllreduce(const BareNcclAllreduce&) = delete;
  BareNcclAllreduce& operator=(const BareNcclAllreduce&) = delete;

  // ncclAllReduce(buffer, buffer, count, ncclFloat32, ncclSum) on the stream, then waits for it.
  // `buffer` is device memory of the stream's device.
  void sum_in_place(float* buffer, std::size_t count);

 private:
  kernels::Stream stream_;
  ncclComm* comm_ = nullptr;
  int rank_ = 0;
};

}  // namespace gw
