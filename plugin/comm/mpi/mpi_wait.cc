#include "plugin/comm/mpi/mpi_wait.h"

#include <sched.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "common/enum_names.h"
#include "plugin/config/registry.h"

namespace gw {

// Note [Waiting for MPI]
// A rank that waits in a collective spins in MPI's progress loop. With a core per rank that is the
// quickest way to wait, but with more ranks on a node than it has cores, a spinning rank takes the
// core from a rank that computes, whose peers then wait (and spin) longer still. Open MPI gives the
// core up between polls by itself when its launcher sees more ranks than slots
// (mpi_yield_when_idle); MPICH's ch4 device has no such setting (MPIR_CVAR_POLLS_BEFORE_YIELD
// belongs to its older ch3 device). So gradwire can do the waiting itself (GRADWIRE_MPI_WAIT):
//   block  MPI's blocking collectives: MPI's tuned algorithms and MPI's own way of waiting.
//   yield  the non-blocking collective, polled with MPI_Test, with sched_yield() between polls.
//   auto   yield when some node has more ranks than the CPUs its ranks may run on (the union of
//          their affinity masks) and the MPI is not Open MPI; block otherwise.
// The blocking forms stay the default because Open MPI's blocking allreduce is faster than its
// non-blocking one (gradwire_bench_allreduce). Every rank must wait the same way, since a blocking
// collective never matches a non-blocking one: MpiCommunicator's constructor checks, with
// resolve_mpi_wait, that the ranks asked for the same mode, and resolves auto from facts reduced
// over every rank, so all ranks decide alike.

const char* to_string(MpiWait wait) {
  switch (wait) {
    case MpiWait::kAuto:
      return "auto";
    case MpiWait::kBlock:
      return "block";
    case MpiWait::kYield:
      return "yield";
  }
  return "?";
}

MpiWait parse_mpi_wait(std::string_view text) {
  constexpr MpiWait kWaits[] = {MpiWait::kAuto, MpiWait::kBlock, MpiWait::kYield};
  if (const auto wait = find_by_name(text, kWaits)) return *wait;
  throw std::invalid_argument("MPI wait mode '" + std::string(text) +
                              "' is not one of: " + names_of(kWaits));
}

namespace {

// The ranks of `comm` on this node and the CPUs any of them may run on.
struct NodeShare {
  int ranks = 1;
  int cpus = 1;
};

NodeShare node_share(MPI_Comm comm, int rank) {
  MPI_Comm node = MPI_COMM_NULL;
  GW_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node), rank);
  struct Free {
    MPI_Comm* c;
    ~Free() { MPI_Comm_free(c); }
  } free_node{&node};
  MPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN);
  NodeShare share;
  MPI_Comm_size(node, &share.ranks);
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  sched_getaffinity(0, sizeof cpus, &cpus);  // on failure: no CPUs from this rank, see below
  GW_MPI_CHECK(
      MPI_Allreduce(MPI_IN_PLACE, &cpus, static_cast<int>(sizeof cpus), MPI_BYTE, MPI_BOR, node),
      rank);
  share.cpus = CPU_COUNT(&cpus);
  if (share.cpus == 0) share.cpus = static_cast<int>(std::thread::hardware_concurrency());
  share.cpus = std::max(share.cpus, 1);
  return share;
}

}  // namespace

MpiWaitChoice resolve_mpi_wait(MPI_Comm comm, int rank, MpiWait requested) {
  const NodeShare share = node_share(comm, rank);
  const int oversubscribed = share.ranks > share.cpus ? 1 : 0;
  // One reduction: the largest and smallest mode asked for, and whether any node is oversubscribed.
  int facts[3] = {static_cast<int>(requested), -static_cast<int>(requested), oversubscribed};
  GW_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, facts, 3, MPI_INT, MPI_MAX, comm), rank);
  const auto most = static_cast<MpiWait>(facts[0]);
  const auto least = static_cast<MpiWait>(-facts[1]);
  if (most != least) {
    throw config::ConfigError("GRADWIRE_MPI_WAIT differs across ranks (both '" +
                              std::string(to_string(least)) + "' and '" + to_string(most) +
                              "' were asked for; this rank asked for '" + to_string(requested) +
                              "'): every rank must wait for collectives the same way. Set the " +
                              "same value on every rank (accepted: auto, block, yield)");
  }
  const std::string here = std::to_string(share.ranks) + " ranks on " + std::to_string(share.cpus) +
                           " CPUs on this rank's node";
  MpiWaitChoice choice;
  if (requested != MpiWait::kAuto) {
    choice.mode = requested;
    choice.reason = std::string("GRADWIRE_MPI_WAIT=") + to_string(requested) + " (" + here + ")";
    return choice;
  }
#ifdef OPEN_MPI
  constexpr bool kMpiYieldsItself = true;
#else
  constexpr bool kMpiYieldsItself = false;
#endif
  const bool any_oversubscribed = facts[2] != 0;
  choice.mode = any_oversubscribed && !kMpiYieldsItself ? MpiWait::kYield : MpiWait::kBlock;
  const char* why = !any_oversubscribed ? "no node has more ranks than CPUs"
                    : kMpiYieldsItself  ? "Open MPI yields by itself where it sees more ranks "
                                          "than slots"
                                        : "a node has more ranks than CPUs";
  choice.reason = std::string("auto: ") + to_string(choice.mode) + ", " + why + " (" + here + ")";
  return choice;
}

int wait_request(MPI_Request* request, bool yield) {
  if (!yield) return MPI_Wait(request, MPI_STATUS_IGNORE);
  for (;;) {
    int done = 0;
    const int rc = MPI_Test(request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS || done) return rc;
    sched_yield();
  }
}

MpiWork::MpiWork(std::string what, int rank, bool yield)
    : what_(std::move(what)), rank_(rank), yield_(yield) {}

void MpiWork::wait() {
  if (request_ != MPI_REQUEST_NULL) {
    const int rc = wait_request(&request_, yield_);
    request_ = MPI_REQUEST_NULL;
    if (rc != MPI_SUCCESS) {
      error_ = what_ + " failed on rank " + std::to_string(rank_) + ": " + mpi_error_text(rc);
    }
  }
  if (!error_.empty()) throw CommError(error_);
}

void MpiWork::complete_quietly() noexcept {
  if (request_ != MPI_REQUEST_NULL) wait_request(&request_, yield_);
  request_ = MPI_REQUEST_NULL;
}

}  // namespace gw
