// The NCCL entry point in a build without NCCL: a clear error, never a link failure.
#include "plugin/comm/nccl/make_nccl_communicator.h"

namespace gw {

bool nccl_built() { return false; }

std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm, const kernels::Stream&) {
  throw CommError(
      "the NCCL backend is unavailable: gradwire was built without NCCL (it needs CUDA and NCCL "
      "at configure time); use the MPI backend (GRADWIRE_BACKEND=mpi), which also carries CUDA "
      "device buffers, staged through host memory");
}

}  // namespace gw
