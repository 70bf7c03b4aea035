#include "plugin/comm/nccl/bare_nccl_allreduce.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <string>

namespace gw {
namespace {

void check(ncclResult_t rc, const char* call, int rank) {
  if (rc != ncclSuccess) {
    throw CommError(std::string("bare ") + call + " failed on rank " + std::to_string(rank) + ": " +
                    ncclGetErrorString(rc));
  }
}

}  // namespace

BareNcclAllreduce::BareNcclAllreduce(MPI_Comm comm, const kernels::Stream& stream)
    : stream_(stream) {
  int size = 1;
  MPI_Comm_rank(comm, &rank_);
  MPI_Comm_size(comm, &size);
  if (stream_.is_host()) {
    throw CommError("BareNcclAllreduce on rank " + std::to_string(rank_) +
                    ": needs a CUDA stream, got the host");
  }
  // Whether rank 0 made the id travels with it, so a failure there ends every rank's setup.
  struct Hello {
    ncclUniqueId id;
    int ok;
  } hello{};
  if (rank_ == 0) hello.ok = ncclGetUniqueId(&hello.id) == ncclSuccess ? 1 : 0;
  if (MPI_Bcast(&hello, static_cast<int>(sizeof hello), MPI_BYTE, 0, comm) != MPI_SUCCESS) {
    throw CommError("BareNcclAllreduce on rank " + std::to_string(rank_) +
                    ": MPI_Bcast of NCCL's unique id failed");
  }
  if (hello.ok == 0) {
    throw CommError("BareNcclAllreduce on rank " + std::to_string(rank_) +
                    ": rank 0 could not make NCCL's unique id");
  }
  stream_.make_current();
  check(ncclCommInitRank(&comm_, size, hello.id, rank_), "ncclCommInitRank", rank_);
}

BareNcclAllreduce::~BareNcclAllreduce() {
  if (comm_ == nullptr) return;
  try {
    stream_.synchronize();
  } catch (...) {
    // A CUDA error here: the communicator is released below all the same.
  }
  ncclCommDestroy(comm_);
}

void BareNcclAllreduce::sum_in_place(float* buffer, std::size_t count) {
  stream_.make_current();
  check(ncclAllReduce(buffer, buffer, count, ncclFloat32, ncclSum, comm_,
                      static_cast<cudaStream_t>(stream_.native())),
        "ncclAllReduce", rank_);
  stream_.synchronize();
}

}  // namespace gw
