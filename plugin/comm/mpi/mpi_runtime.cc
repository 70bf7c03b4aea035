#include "plugin/comm/mpi/mpi_runtime.h"

#include <mpi.h>

#include <cstdlib>

#include "plugin/comm/mpi/mpi_communicator.h"

namespace gw {

MpiRuntime::MpiRuntime(int* argc, char*** argv) {
  if (initialized()) return;
  // Serialized: gradwire calls MPI from one thread at a time.
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
    throw CommError("MPI_Init_thread failed");
  }
  owns_ = true;
}

MpiRuntime::~MpiRuntime() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owns_ && !finalized) MPI_Finalize();
}

bool MpiRuntime::initialized() {
  int init = 0;
  MPI_Initialized(&init);
  return init != 0;
}

void MpiRuntime::abort_job(int exit_code) {
  if (initialized()) MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::exit(exit_code);
}

std::unique_ptr<Communicator> make_mpi_world_communicator() {
  return std::make_unique<MpiCommunicator>(MPI_COMM_WORLD);
}

}  // namespace gw
