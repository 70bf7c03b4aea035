// The NCCL backend's entry point, declared in every build: in a build with NCCL it makes an
// NcclCommunicator (nccl_communicator.h), in one without it throws a CommError saying so
// (no_nccl.cc). Code above plugin/comm/nccl/ goes through here and never sees NCCL's headers.
#pragma once

#include <mpi.h>

#include <memory>

#include "kernels/stream.h"
#include "plugin/comm/communicator.h"

namespace gw {

// Whether this build of gradwire has the NCCL backend (CUDA and NCCL found at configure time).
bool nccl_built();

// An NCCL communicator over the ranks of `comm`, running its collectives on `stream` (a CUDA
// stream, on the device this rank's buffers live on). Collective over `comm`. Throws CommError in
// a build without NCCL, for a host stream, or when NCCL cannot set the communicator up.
std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm comm, const kernels::Stream& stream);

}  // namespace gw
