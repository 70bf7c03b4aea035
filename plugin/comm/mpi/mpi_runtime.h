// Starting and stopping MPI, and the world communicator, without including <mpi.h>.
#pragma once

#include <memory>

#include "plugin/comm/communicator.h"

namespace gw {

// RAII for MPI itself: initialises MPI unless the program already did, and finalises it on
// destruction only if it was the one that initialised it.
class MpiRuntime {
 public:
  MpiRuntime(int* argc, char*** argv);
  ~MpiRuntime();
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;

  // Ends every rank of the job at once (MPI_Abort): for a fatal error on one rank, so that no
  // other rank waits forever in a collective.
  [[noreturn]] static void abort_job(int exit_code);
  static bool initialized();

 private:
  bool owns_ = false;
};

// A communicator over every rank of the job (a duplicate of MPI_COMM_WORLD, so gradwire's messages
// never match the program's own). MPI must be initialised.
std::unique_ptr<Communicator> make_mpi_world_communicator();

}  // namespace gw
