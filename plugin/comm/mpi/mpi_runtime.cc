#include "plugin/comm/mpi/mpi_runtime.h"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "plugin/comm/mpi/mpi_communicator.h"
#include "plugin/comm/mpi/node_groups.h"
#include "plugin/comm/staging_communicator.h"
#include "plugin/config/params.h"

namespace gw {
namespace {

// Note [Ending the job on an error].
constexpr auto kAbortGrace = std::chrono::milliseconds(250);
std::once_flag g_handlers_installed;
std::terminate_handler g_previous_terminate = nullptr;
// An MpiRuntime was destroyed by an exception and left MPI running (not finalized).
std::atomic<bool> g_left_running{false};

bool mpi_running() {
  int init = 0, finalized = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&finalized);
  return init != 0 && finalized == 0;
}

void on_terminate() {
  std::string what = "std::terminate was called without an exception in flight";
  if (const std::exception_ptr error = std::current_exception()) {
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
      what = "an exception that is not a std::exception";
    }
  }
  MpiRuntime::print_error("gradwire", "uncaught exception", what);
  if (mpi_running()) MpiRuntime::abort_job(1);
  if (g_previous_terminate != nullptr) g_previous_terminate();
  std::abort();
}

void on_exit() {
  if (!g_left_running.load() || !mpi_running()) return;
  MpiRuntime::print_error("gradwire", "error",
                          "the program returned after an exception without ending the MPI job; "
                          "ending every rank now (gw::run_mpi_main does this for you)");
  std::this_thread::sleep_for(kAbortGrace);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

void install_handlers() {
  std::call_once(g_handlers_installed, [] {
    g_previous_terminate = std::set_terminate(on_terminate);
    std::atexit(on_exit);
  });
}

// The rank an MPI launcher gave this process, before MPI starts (-1 if none).
int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const char* value = std::getenv(name)) {
      char* end = nullptr;
      const long r = std::strtol(value, &end, 10);
      if (end != value && *end == '\0' && r >= 0) return static_cast<int>(r);
    }
  }
  return -1;
}

}  // namespace

MpiRuntime::MpiRuntime(int* argc, char*** argv) : uncaught_(std::uncaught_exceptions()) {
  install_handlers();
  if (initialized()) return;
  // Serialized: gradwire calls MPI from one thread at a time.
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
    throw CommError("MPI_Init_thread failed");
  }
  owns_ = true;
}

MpiRuntime::~MpiRuntime() {
  if (!mpi_running()) return;
  if (std::uncaught_exceptions() > uncaught_ && !config::ConfigError::every_rank_error_alive()) {
    // Unwinding: MPI_Finalize would wait for peers that wait for this rank. Whoever catches the
    // exception ends the job; if nobody does, the exit handler will
    // (Note [Ending the job on an error]). An error every rank threw together is the exception:
    // every rank finalizes.
    g_left_running.store(true);
    return;
  }
  if (owns_) MPI_Finalize();
}

bool MpiRuntime::initialized() {
  int init = 0;
  MPI_Initialized(&init);
  return init != 0;
}

int MpiRuntime::world_rank() {
  if (!mpi_running()) return -1;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

void MpiRuntime::print_error(const char* program, const char* what, const std::string& message) {
  int rank = world_rank();
  if (rank < 0) rank = launcher_rank();
  if (rank >= 0) {
    std::fprintf(stderr, "%s: rank %d: %s: %s\n", program, rank, what, message.c_str());
  } else {
    std::fprintf(stderr, "%s: %s: %s\n", program, what, message.c_str());
  }
  std::fflush(stderr);
}

int run_mpi_main(int* argc, char*** argv, const char* program, const std::function<int()>& body) {
  MpiRuntime mpi(argc, argv);
  // An error every rank threw together ends through MPI_Finalize (mpi's destructor, after the
  // catch); any other through MPI_Abort.
  const auto end_with = [program](const char* what, const char* message, int code, bool every_rank,
                                  bool same_text = false) {
    // The same text from every rank is printed by rank 0 alone.
    if (!same_text || MpiRuntime::world_rank() == 0)
      MpiRuntime::print_error(program, what, message);
    if (!every_rank) MpiRuntime::abort_job(code);
    return code;
  };
  try {
    return body();
  } catch (const config::ConfigError& e) {
    return end_with("configuration error", e.what(), 2, e.thrown_on_every_rank(),
                    e.same_on_every_rank());
  } catch (const std::invalid_argument& e) {
    return end_with("invalid argument", e.what(), 2, false);
  } catch (const std::exception& e) {
    return end_with("error", e.what(), 1, false);
  } catch (...) {
    return end_with("error", "an exception that is not a std::exception", 1, false);
  }
}

namespace {

// FNV-1a over the kind and the message: equal verdicts, equal digests.
std::uint64_t verdict_digest(const InputVerdict& v) {
  std::uint64_t h = 14695981039346656037ULL;
  for (const std::string* text : {&v.what, &v.message}) {
    for (const unsigned char c : *text) h = (h ^ c) * 1099511628211ULL;
    h = (h ^ 0xffU) * 1099511628211ULL;
  }
  return h;
}

}  // namespace

// Each rank's checks, agreed (Note [One verdict on the input]).
int agree_on_input(const char* program, const InputVerdict& mine) {
  const std::uint64_t record[2] = {static_cast<std::uint64_t>(mine.exit_code),
                                   verdict_digest(mine)};
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<std::uint64_t> all(2 * static_cast<std::size_t>(size));
  if (MPI_Allgather(record, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, MPI_COMM_WORLD) !=
      MPI_SUCCESS) {
    throw CommError("MPI_Allgather failed on rank " + std::to_string(MpiRuntime::world_rank()) +
                    " while the ranks compared the checks of their input");
  }
  std::uint64_t worst = 0;
  bool alike = true;
  int first_passed = -1;
  std::string failed;
  for (int r = 0; r < size; ++r) {
    const std::uint64_t code = all[2 * static_cast<std::size_t>(r)];
    worst = std::max(worst, code);
    alike = alike && code == all[0] && all[2 * static_cast<std::size_t>(r) + 1] == all[1];
    if (code == 0 && first_passed < 0) first_passed = r;
    if (code != 0) failed += (failed.empty() ? "" : ", ") + std::to_string(r);
  }
  if (worst == 0) return 0;
  const int rank = MpiRuntime::world_rank();
  if (mine.exit_code != 0 && (!alike || rank == 0)) {
    MpiRuntime::print_error(program, mine.what.c_str(), mine.message);
  }
  if (rank == first_passed) {
    MpiRuntime::print_error(program, "stopped",
                            "nothing was sent: the input of rank(s) " + failed +
                                " did not pass its checks (its message says why)");
  }
  return static_cast<int>(worst);
}

// Note [Stopping before MPI starts]
// gradwire_train checks its input (command line, GRADWIRE_* values, data) before MPI starts, so a
// bad input sends nothing. But when one rank stops there and the others do not (a value set on one
// rank only), the others wait in MPI_Init for it. Open MPI's mpirun ends the whole job when any
// process exits non-zero; MPICH's Hydra does not, and the job hangs. So a process started by a
// launcher beside others joins them in MPI_Init only to call MPI_Abort, which every launcher turns
// into the end of the job; a process started on its own just exits. (gradwire_train itself does
// better: every rank joins its peers in MPI_Init and one verdict on all the ranks' checks,
// Note [One verdict on the input].)
void MpiRuntime::abort_job(int exit_code) {
  if (!initialized() && launched_with_peers()) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  }
  if (mpi_running()) {
    std::this_thread::sleep_for(kAbortGrace);  // Note [Ending the job on an error]
    MPI_Abort(MPI_COMM_WORLD, exit_code);
  }
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

namespace {

// Note [Settings that shape a communicator]
// GRADWIRE_MPI_WAIT, GRADWIRE_HIERARCHICAL and GRADWIRE_HIERARCHY_LOCAL_SIZE decide which
// collectives build the world communicator (a split into nodes or none, a duplicate) and how a rank
// waits in them, as GRADWIRE_BACKEND decides between NCCL and MPI. Ranks that differ on one of them
// would enter different collectives and wait there forever, before the full configuration check
// (plugin/config_check.h) could compare them. So no collective whose shape depends on a setting
// runs before the ranks have agreed on that setting: every rank's values go to every rank first, in
// one allgather over MPI_COMM_WORLD whose shape depends on nothing (fixed-width text), and a
// difference is the same ConfigError on every rank, naming the setting and both values.
// (GRADWIRE_BACKEND is compared the same way, with the facts choose_world_backend gathers.)
void agree_on_shaping_settings(const config::Config& config) {
  constexpr const char* kKeys[] = {config::keys::kMpiWait, config::keys::kHierarchical,
                                   config::keys::kHierarchyLocalSize};
  constexpr int kCount = 3;
  constexpr int kWidth = 32;
  std::vector<char> mine(kCount * kWidth, '\0');
  for (int k = 0; k < kCount; ++k) {
    const std::string text = config.text(kKeys[k]);
    std::copy_n(text.begin(), std::min<std::size_t>(text.size(), kWidth - 1), &mine[k * kWidth]);
  }
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<char> all(static_cast<std::size_t>(size) * mine.size());
  if (MPI_Allgather(mine.data(), kCount * kWidth, MPI_CHAR, all.data(), kCount * kWidth, MPI_CHAR,
                    MPI_COMM_WORLD) != MPI_SUCCESS) {
    throw CommError("MPI_Allgather failed on rank " + std::to_string(MpiRuntime::world_rank()) +
                    " while the ranks compared " + kKeys[0] + ", " + kKeys[1] + " and " + kKeys[2]);
  }
  for (int r = 1; r < size; ++r) {
    for (int k = 0; k < kCount; ++k) {
      const std::string first(&all[k * kWidth]);
      const std::string other(&all[(static_cast<std::size_t>(r) * kCount + k) * kWidth]);
      if (other == first) continue;
      throw config::ConfigError(
          std::string(kKeys[k]) + " differs across ranks (rank 0 '" + first + "', rank " +
              std::to_string(r) + " '" + other +
              "'): it shapes the world communicator, which every rank must build alike. Set the "
              "same value on every rank",
          config::ConfigError::SameOnEveryRank{});
    }
  }
}

}  // namespace

// Note [Choosing the hierarchy]
// GRADWIRE_HIERARCHICAL=auto takes the two-level allreduce (Note [Hierarchical allreduce]) when it
// can only save network bytes: more than one node, more than one rank on each, the same number on
// every node, and host buffers. With one node there is no network to spare; with one rank per node
// the node-local stages are empty and the cross stage is the flat allreduce; nodes of different
// sizes have no common shard layout. Device buffers stay flat, as the two-level exchange stages
// nothing. GRADWIRE_HIERARCHICAL=1 insists: unequal nodes or device buffers are then an error
// rather than a quiet fallback. The nodes are found in every case (find_node_groups), so that the
// flat communicator knows them too and the counters can split intra- from inter-node bytes.
std::unique_ptr<Communicator> make_mpi_world_communicator(const config::Config& config,
                                                          bool device_buffers,
                                                          HierarchyChoice* chosen) {
  install_handlers();                 // also for programs that start MPI themselves
  agree_on_shaping_settings(config);  // Note [Settings that shape a communicator]
  const MpiWait wait = parse_mpi_wait(config.get_string(config::keys::kMpiWait));
  const std::string& setting = config.get_string(config::keys::kHierarchical);
  const auto local = static_cast<int>(config.get_int(config::keys::kHierarchyLocalSize));
  const NodeGroups groups = find_node_groups(MPI_COMM_WORLD, local, setting == "1");
  HierarchyChoice c;
  c.nodes = groups.nodes;
  c.local_size = groups.local_size;
  c.source = groups.source;
  const std::string shape = std::to_string(groups.nodes) + " node(s) x " +
                            std::to_string(groups.local_size) + " rank(s), from " + groups.source;
  if (setting == "1" && device_buffers) {
    throw config::ConfigError(
        "GRADWIRE_HIERARCHICAL=1: the two-level exchange carries host buffers only, and this "
        "program exchanges CUDA device buffers; accepted here: 0 or auto (the flat exchange)",
        config::ConfigError::SameOnEveryRank{});
  }
  if (setting == "0") {
    c.reason = "GRADWIRE_HIERARCHICAL=0: flat (" + shape + ")";
  } else if (setting == "1") {
    c.enabled = true;
    c.reason = "GRADWIRE_HIERARCHICAL=1: two levels, " + shape;
  } else if (device_buffers) {
    c.reason = "auto: flat, as the buffers are on a CUDA device (" + shape + ")";
  } else if (!groups.equal) {
    c.reason = "auto: flat, as the nodes hold different numbers of ranks (" + groups.sizes +
               ", from " + groups.source + ")";
  } else if (groups.nodes == 1) {
    c.reason = "auto: flat, as there is one node (" + shape + ")";
  } else if (groups.local_size == 1) {
    c.reason = "auto: flat, as there is one rank per node (" + shape + ")";
  } else {
    c.enabled = true;
    c.reason = "auto: two levels, " + shape;
  }
  if (chosen != nullptr) *chosen = c;
  if (c.enabled) return make_hierarchical_mpi_communicator(MPI_COMM_WORLD, groups, wait);
  auto flat = std::make_unique<MpiCommunicator>(MPI_COMM_WORLD, wait);
  flat->set_node_of_rank(groups.node_of_rank);
  return with_device_staging(std::move(flat));  // Note [Staging device buffers]
}

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string library;
  // The first line (Open MPI counts the closing NUL in `len`), its runs of blanks made one space
  // each (MPICH puts a tab after "Version:").
  for (int i = 0; i < len && text[i] != '\0' && text[i] != '\n' && text[i] != '\r'; ++i) {
    const bool blank = std::isspace(static_cast<unsigned char>(text[i])) != 0;
    if (!blank) {
      library += text[i];
    } else if (!library.empty() && library.back() != ' ') {
      library += ' ';
    }
  }
  if (!library.empty() && library.back() == ' ') library.pop_back();
  return library;
}

MpiInfo mpi_info(const Communicator& world) {
  const Communicator* flat = &world;
  if (const auto* two = dynamic_cast<const HierarchicalCommunicator*>(flat)) flat = &two->flat();
  if (const auto* staged = dynamic_cast<const StagingCommunicator*>(flat)) flat = &staged->inner();
  const auto* mpi = dynamic_cast<const MpiCommunicator*>(flat);
  if (mpi == nullptr) {
    throw std::invalid_argument("mpi_info: not a communicator from make_mpi_world_communicator");
  }
  MpiInfo info;
  info.library = mpi_library_version();
  info.wait = to_string(mpi->wait_mode());
  info.wait_reason = mpi->wait_reason();
  return info;
}

}  // namespace gw
