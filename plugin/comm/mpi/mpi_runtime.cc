#include "plugin/comm/mpi/mpi_runtime.h"

#include <mpi.h>

#include <cctype>
#include <cstdlib>
#include <stdexcept>

#include "plugin/comm/mpi/mpi_communicator.h"
#include "plugin/config/params.h"

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

// Note [Stopping before MPI starts]
// gradwire_train checks its input (command line, GRADWIRE_* values, data) before MPI starts, so a
// bad input sends nothing. But when one rank stops there and the others do not (a value set on one
// rank only), the others wait in MPI_Init for it. Open MPI's mpirun ends the whole job when any
// process exits non-zero; MPICH's Hydra does not, and the job hangs. So a process started by a
// launcher beside others joins them in MPI_Init only to call MPI_Abort, which every launcher turns
// into the end of the job; a process started on its own just exits.
void MpiRuntime::abort_job(int exit_code) {
  if (!initialized() && launched_with_peers()) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (initialized() && !finalized) MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::exit(exit_code);
}

bool MpiRuntime::launched_with_peers() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && std::strtol(value, nullptr, 10) > 1) return true;
  }
  return false;
}

std::unique_ptr<Communicator> make_mpi_world_communicator() {
  return make_mpi_world_communicator(config::Config::from_environment());
}

std::unique_ptr<Communicator> make_mpi_world_communicator(const config::Config& config) {
  return std::make_unique<MpiCommunicator>(
      MPI_COMM_WORLD, parse_mpi_wait(config.get_string(config::keys::kMpiWait)));
}

MpiInfo mpi_info(const Communicator& world) {
  const auto* mpi = dynamic_cast<const MpiCommunicator*>(&world);
  if (mpi == nullptr) {
    throw std::invalid_argument("mpi_info: not a communicator from make_mpi_world_communicator");
  }
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(text, &len);
  MpiInfo info;
  // The first line (Open MPI counts the closing NUL in `len`), its runs of blanks made one space
  // each (MPICH puts a tab after "Version:").
  for (int i = 0; i < len && text[i] != '\0' && text[i] != '\n' && text[i] != '\r'; ++i) {
    const bool blank = std::isspace(static_cast<unsigned char>(text[i])) != 0;
    if (!blank) {
      info.library += text[i];
    } else if (!info.library.empty() && info.library.back() != ' ') {
      info.library += ' ';
    }
  }
  if (!info.library.empty() && info.library.back() == ' ') info.library.pop_back();
  info.wait = to_string(mpi->wait_mode());
  info.wait_reason = mpi->wait_reason();
  return info;
}

}  // namespace gw
