// Starting and stopping MPI, and the world communicator, without including <mpi.h>.
#pragma once

#include <memory>
#include <string>

#include "plugin/comm/communicator.h"
#include "plugin/config/config.h"

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
  // other rank waits forever in a collective. Before MPI has started, a process that a launcher
  // started beside others (launched_with_peers) starts MPI only to abort, so that its peers are not
  // left in MPI_Init (Note [Stopping before MPI starts]); a process on its own just exits.
  [[noreturn]] static void abort_job(int exit_code);
  static bool initialized();
  // Whether an MPI launcher started this process as one of several: OMPI_COMM_WORLD_SIZE (Open
  // MPI), PMI_SIZE (MPICH's Hydra and its derivatives, Slurm's PMI) or SLURM_STEP_NUM_TASKS above 1.
  static bool launched_with_peers();

 private:
  bool owns_ = false;
};

// A communicator over every rank of the job (a duplicate of MPI_COMM_WORLD, so gradwire's messages
// never match the program's own). MPI must be initialised. Collective. It waits for collectives as
// GRADWIRE_MPI_WAIT says: read from this process's environment, or from `config` (a program's
// configuration, which the environment has already overridden).
std::unique_ptr<Communicator> make_mpi_world_communicator();
std::unique_ptr<Communicator> make_mpi_world_communicator(const config::Config& config);

// What a report says of the MPI under a communicator from make_mpi_world_communicator: the
// library's name and version (MPI_Get_library_version, first line), and how the communicator waits
// for collectives (block or yield) and why. Throws std::invalid_argument for another communicator.
struct MpiInfo {
  std::string library;
  std::string wait;
  std::string wait_reason;
};
MpiInfo mpi_info(const Communicator& world);

}  // namespace gw
