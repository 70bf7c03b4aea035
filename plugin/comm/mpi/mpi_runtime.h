// Starting and stopping MPI, and the world communicator, without including <mpi.h>.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "plugin/comm/communicator.h"
#include "plugin/comm/hierarchical_communicator.h"
#include "plugin/config/config.h"

namespace gw {

// Note [Ending the job on an error]
// After MPI_Init, an error on one rank must end every rank: a peer waiting in a collective for a
// rank that has given up waits forever, and MPI_Finalize waits for every peer too. So:
// - An error is ended with MPI_Abort (abort_job), which every launcher turns into the end of the
//   whole job, unless every rank threw it together: a config::ConfigError thrown on every rank
//   (the cross-rank checks, agree_on_startup_errors) ends through MPI_Finalize instead, each rank
//   printing its own message once (rank 0 alone, when every rank has the same one), with no
//   abort banner. A program may end other errors that every rank threw together the same way,
//   returning from its body (gradwire_train's failed checkpoint write, which the ranks agree on).
// - An MpiRuntime destroyed while an exception is in flight does not call MPI_Finalize (it would
//   wait for peers that are waiting for this rank). If the program then returns from main
//   without aborting (a `catch` that prints and returns 1), an exit handler aborts the job.
// - An exception that nothing catches, on any thread (the program's, or one of its own), goes to
//   a terminate handler that prints it with the rank and aborts the job.
// - run_mpi_main does all of this for a program's main: the body runs with MPI started, and
//   whatever it throws is printed once, with the rank, and ends the job with exit code 2 (bad
//   input: config::ConfigError, std::invalid_argument) or 1 (anything else).
// Each abort waits a quarter of a second first, so that the message reaches the launcher before
// the job is torn down, and a peer failing at the same moment gets to print its own.

// RAII for MPI itself: initialises MPI unless the program already did, and finalises it on
// destruction only if it was the one that initialised it and no exception is in flight
// (Note [Ending the job on an error]). Constructing one also installs the terminate and exit
// handlers of that Note.
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
  // Prints "<program>: rank R: <what>: <message>" once on stderr, flushed (the rank is left out
  // before MPI starts).
  static void print_error(const char* program, const char* what, const std::string& message);
  // This process's rank in MPI_COMM_WORLD, or -1 before MPI starts and after it ends.
  static int world_rank();
  static bool initialized();
  // Whether an MPI launcher started this process as one of several: OMPI_COMM_WORLD_SIZE (Open
  // MPI), PMI_SIZE (MPICH's Hydra and its derivatives, Slurm's PMI) or SLURM_STEP_NUM_TASKS
  // above 1.
  static bool launched_with_peers();

 private:
  bool owns_ = false;
  int uncaught_ = 0;  // std::uncaught_exceptions() at construction
};

// A program's main with MPI, ended properly on every path (Note [Ending the job on an error]):
// starts MPI (an MpiRuntime), runs `body` and returns its exit code after MPI_Finalize. Whatever
// `body` throws is printed once as "<program>: rank R: <kind>: <message>" and ends the job with
// exit code 2 for bad input (config::ConfigError, std::invalid_argument) or 1 for anything else:
// through MPI_Finalize when every rank threw it together, through MPI_Abort otherwise.
//
//   int main(int argc, char** argv) {
//     return gw::run_mpi_main(&argc, &argv, "my_trainer", [&] { return train(); });
//   }
int run_mpi_main(int* argc, char*** argv, const char* program, const std::function<int()>& body);

// Note [One verdict on the input]
// gradwire_train checks its input on every rank before MPI starts
// (Note [Stopping before MPI starts]). Under a launcher, every rank then starts MPI, whether its
// checks passed or not, and the ranks' first collective is this verdict: one allgather of each
// rank's exit code and a digest of its message, fixed in width, so that its shape depends on
// nothing. Where every rank passed, the run goes on. Otherwise every rank returns the job's exit
// code (the largest) and ends through MPI_Finalize, without an abort: the message is printed once,
// by rank 0, where every rank failed with the same one (a bad command line or GRADWIRE_* value
// given to all), else by each rank that failed, and the first rank that passed names the ranks that
// stopped the job.
struct InputVerdict {
  int exit_code = 0;  // 0: this rank's input passed its checks
  std::string what;   // the kind of error, as print_error takes it ("configuration error")
  std::string message;
};
// Collective over MPI_COMM_WORLD (MPI started); returns 0, or the job's exit code on every rank.
int agree_on_input(const char* program, const InputVerdict& mine);

// A communicator over every rank of the job (a duplicate of MPI_COMM_WORLD, so gradwire's messages
// never match the program's own). MPI must be initialised. Collective. It waits for collectives as
// GRADWIRE_MPI_WAIT says; carries CUDA device buffers where CUDA is usable (a StagingCommunicator
// over each MpiCommunicator, Note [Staging device buffers]); and is a HierarchicalCommunicator
// where GRADWIRE_HIERARCHICAL and GRADWIRE_HIERARCHY_LOCAL_SIZE say so
// (Note [Choosing the hierarchy] in mpi_runtime.cc): read from this process's environment, or
// from `config` (a program's configuration, which the environment has already overridden).
// `device_buffers`: the program exchanges CUDA device buffers, which the two-level exchange does
// not carry. `chosen`, when given, receives the choice.
std::unique_ptr<Communicator> make_mpi_world_communicator();
std::unique_ptr<Communicator> make_mpi_world_communicator(const config::Config& config,
                                                          bool device_buffers = false,
                                                          HierarchyChoice* chosen = nullptr);

// What a report says of the MPI under a communicator from make_mpi_world_communicator: the
// library's name and version (MPI_Get_library_version, first line), and how the communicator waits
// for collectives (block or yield) and why. Throws std::invalid_argument for another communicator.
struct MpiInfo {
  std::string library;
  std::string wait;
  std::string wait_reason;
};
MpiInfo mpi_info(const Communicator& world);
// The library's name and version alone: what a report says of the MPI beneath a communicator whose
// collectives are not MPI's (NCCL's world communicator), where MPI carries only control messages.
std::string mpi_library_version();

}  // namespace gw
