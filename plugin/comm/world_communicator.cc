#include "plugin/comm/world_communicator.h"

#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/enum_names.h"
#include "kernels/stream.h"
#include "plugin/comm/mpi/mpi_runtime.h"
#include "plugin/comm/nccl/make_nccl_communicator.h"
#include "plugin/config/params.h"

namespace gw {

const char* to_string(Backend backend) {
  switch (backend) {
    case Backend::kAuto:
      return "auto";
    case Backend::kMpi:
      return "mpi";
    case Backend::kNccl:
      return "nccl";
  }
  return "?";
}

Backend parse_backend(std::string_view text) {
  constexpr Backend kBackends[] = {Backend::kAuto, Backend::kMpi, Backend::kNccl};
  if (const auto backend = find_by_name(text, kBackends)) return *backend;
  throw std::invalid_argument("backend '" + std::string(text) +
                              "' is not one of: " + names_of(kBackends));
}

namespace {

// Note [Choosing the backend]
// NCCL runs one rank per GPU on device memory; MPI runs anywhere, and carries device buffers by
// staging them through pinned host memory (Note [Staging device buffers]). So NCCL can work only
// when (a) gradwire was built with it, (b) the caller's buffers are on a CUDA device, (c) every
// rank sees a CUDA device, and (d) no two ranks of a node use the same one. For (d) each rank
// takes the device it is told, or else its node-local rank modulo the node's device count (so a
// node's ranks spread over its devices, and more ranks than devices means two share one), and the
// ranks of a node compare the PCI bus ids of their devices: a bus id names one physical GPU
// whatever CUDA_VISIBLE_DEVICES made its ordinal in each process, so ranks that each see one
// different GPU as device 0 do not count as sharing.
// Every rank's facts (the backend it asked for; (b), (c), and a rank it shares its device with)
// are gathered to every rank, which then decides from the same table: all ranks pick the same
// backend, and an error (nccl asked for where it cannot work, or ranks asking for different
// backends) has the same text on every rank, thrown before any collective of the new
// communicator. auto picks nccl when (a)-(d) hold and mpi otherwise; until the plugin keeps its
// gradients on the device, callers pass Device::kHost and auto means mpi.

// One rank's facts, as ints for one MPI_Allgather.
struct RankFacts {
  int requested = 0;          // a Backend
  int buffers_on_device = 0;  // (b)
  int has_device = 0;         // (c)
  int shares_with = -1;       // (d): the world rank of a rank of this node on the same device
};
constexpr int kFactInts = 4;

[[noreturn]] void fail_everywhere(const std::string& message) {
  throw config::ConfigError(message, config::ConfigError::SameOnEveryRank{});
}

void check_mpi(int rc, const char* call) {
  if (rc != MPI_SUCCESS) {
    throw CommError(std::string(call) + " failed on rank " +
                    std::to_string(MpiRuntime::world_rank()) +
                    " while choosing the communication backend");
  }
}

// An MPI communicator of this file's own, freed at the end of its scope: a duplicate of
// MPI_COMM_WORLD (whose collectives never match the program's), or the ranks of this rank's node.
class OwnComm {
 public:
  static OwnComm world_duplicate() {
    OwnComm c;
    check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &c.comm_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(c.comm_, MPI_ERRORS_RETURN);
    return c;
  }
  static OwnComm node_of(MPI_Comm world, int world_rank) {
    OwnComm c;
    check_mpi(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL, &c.comm_),
              "MPI_Comm_split_type");
    MPI_Comm_set_errhandler(c.comm_, MPI_ERRORS_RETURN);
    return c;
  }
  OwnComm(OwnComm&& other) noexcept : comm_(std::exchange(other.comm_, MPI_COMM_NULL)) {}
  OwnComm& operator=(OwnComm&&) = delete;
  ~OwnComm() {
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }
  MPI_Comm get() const { return comm_; }
  int rank() const {
    int r = 0;
    MPI_Comm_rank(comm_, &r);
    return r;
  }
  int size() const {
    int n = 1;
    MPI_Comm_size(comm_, &n);
    return n;
  }

 private:
  OwnComm() = default;
  MPI_Comm comm_ = MPI_COMM_NULL;
};

// The world rank of another rank of this rank's node that would use the same physical device as
// `device` (-1: none). Collective over `world`.
int shared_device_peer(MPI_Comm world, int world_rank, int device, bool has_device) {
  const OwnComm node = OwnComm::node_of(world, world_rank);
  struct Entry {
    char bus_id[32];
    int world_rank;
  };
  Entry mine{};
  mine.world_rank = world_rank;
  if (has_device) {
    try {
      std::strncpy(mine.bus_id, kernels::cuda_device_bus_id(device).c_str(),
                   sizeof mine.bus_id - 1);
    } catch (const std::exception&) {
      // An unqueryable device: no bus id, so it is compared with no other.
    }
  }
  std::vector<Entry> all(static_cast<std::size_t>(node.size()));
  check_mpi(MPI_Allgather(&mine, static_cast<int>(sizeof mine), MPI_BYTE, all.data(),
                          static_cast<int>(sizeof mine), MPI_BYTE, node.get()),
            "MPI_Allgather");
  if (mine.bus_id[0] == '\0') return -1;
  for (const Entry& other : all) {
    if (other.world_rank != world_rank && std::strcmp(other.bus_id, mine.bus_id) == 0) {
      return other.world_rank;
    }
  }
  return -1;
}

// The device this rank would use: the one it is told, else its node-local rank modulo the
// devices it sees; -1 without one. Collective over `world` (every rank asks its node).
int device_to_use(const OwnComm& world, int cuda_device) {
  const int local_rank = OwnComm::node_of(world.get(), world.rank()).rank();
  const int device_count = kernels::cuda_device_count();
  if (device_count == 0) return -1;
  return cuda_device >= 0 ? cuda_device : local_rank % device_count;
}

// Every rank's facts, on every rank. Collective over `world`.
std::vector<RankFacts> gather_facts(const OwnComm& world, Backend requested, Device buffers,
                                    int device) {
  RankFacts mine;
  mine.requested = static_cast<int>(requested);
  mine.buffers_on_device = buffers == Device::kCuda ? 1 : 0;
  mine.has_device = device >= 0 && device < kernels::cuda_device_count() ? 1 : 0;
  mine.shares_with = shared_device_peer(world.get(), world.rank(), device, mine.has_device != 0);
  std::vector<RankFacts> all(static_cast<std::size_t>(world.size()));
  static_assert(sizeof(RankFacts) == kFactInts * sizeof(int), "RankFacts is sent as ints");
  check_mpi(MPI_Allgather(&mine, kFactInts, MPI_INT, all.data(), kFactInts, MPI_INT, world.get()),
            "MPI_Allgather");
  return all;
}

std::string join(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : separator) + p;
  return out;
}

void check_same_backend(const std::vector<RankFacts>& all) {
  for (std::size_t r = 1; r < all.size(); ++r) {
    if (all[r].requested != all[0].requested) {
      fail_everywhere(std::string(config::keys::kBackend) + " differs across ranks (rank 0 '" +
                      to_string(static_cast<Backend>(all[0].requested)) + "', rank " +
                      std::to_string(r) + " '" + to_string(static_cast<Backend>(all[r].requested)) +
                      "'): every rank must use the same backend. Set the same value on every rank "
                      "(accepted: auto, mpi, nccl)");
    }
  }
}

// Why NCCL cannot work, in words; empty if it can ((a)-(d) of Note [Choosing the backend]).
std::vector<std::string> why_not_nccl(const std::vector<RankFacts>& all) {
  std::vector<std::string> why_not;
  if (!nccl_built()) why_not.push_back("gradwire was built without NCCL");
  bool host_buffers = false;
  std::vector<std::string> without_device;
  std::string sharing;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const RankFacts& f = all[i];
    const int r = static_cast<int>(i);
    host_buffers = host_buffers || f.buffers_on_device == 0;
    if (f.has_device == 0) without_device.push_back(std::to_string(r));
    if (sharing.empty() && f.shares_with >= 0) {
      sharing = "ranks " + std::to_string(std::min(r, f.shares_with)) + " and " +
                std::to_string(std::max(r, f.shares_with)) +
                " share a CUDA device (NCCL needs a device of its own for every rank)";
    }
  }
  if (host_buffers) {
    why_not.push_back("the buffers are in host memory (NCCL moves CUDA device memory only)");
  }
  if (!without_device.empty()) {
    why_not.push_back(std::string("no CUDA device on rank") +
                      (without_device.size() > 1 ? "s " : " ") + join(without_device, ", "));
  }
  if (!sharing.empty()) why_not.push_back(sharing);
  return why_not;
}

// What `requested` comes to, given why NCCL cannot work (nothing: it can).
BackendChoice decide(Backend requested, const std::vector<std::string>& why_not) {
  BackendChoice choice;
  const std::string key = config::keys::kBackend;
  switch (requested) {
    case Backend::kMpi:
      choice.reason = key + "=mpi";
      break;
    case Backend::kNccl:
      if (!why_not.empty()) {
        fail_everywhere(key + "=nccl cannot work here: " + join(why_not, "; ") + ". Use " + key +
                        "=mpi (it carries device buffers too, staged through host memory) or " +
                        key + "=auto");
      }
      choice.backend = Backend::kNccl;
      choice.reason = key + "=nccl";
      break;
    case Backend::kAuto:
      if (why_not.empty()) {
        choice.backend = Backend::kNccl;
        choice.reason =
            "auto: nccl, every rank has a CUDA device of its own and the buffers are "
            "on it";
      } else {
        choice.reason = "auto: mpi, as " + join(why_not, "; ");
      }
      break;
  }
  return choice;
}

}  // namespace

int default_cuda_device() {
  if (!MpiRuntime::initialized()) {
    throw CommError("default_cuda_device: MPI is not initialised (create an MpiRuntime first)");
  }
  return device_to_use(OwnComm::world_duplicate(), -1);
}

BackendChoice choose_world_backend(const config::Config& config, Device buffers, int cuda_device) {
  if (!MpiRuntime::initialized()) {
    throw CommError("choose_world_backend: MPI is not initialised (create an MpiRuntime first)");
  }
  const Backend requested = parse_backend(config.get_string(config::keys::kBackend));
  const OwnComm world = OwnComm::world_duplicate();
  const int device = device_to_use(world, cuda_device);
  const std::vector<RankFacts> all = gather_facts(world, requested, buffers, device);
  // From here on every rank reads the same table, and so decides and words its errors alike.
  check_same_backend(all);
  BackendChoice choice = decide(requested, why_not_nccl(all));
  if (choice.backend == Backend::kNccl) choice.cuda_device = device;
  return choice;
}

std::unique_ptr<Communicator> make_world_communicator(const config::Config& config, Device buffers,
                                                      int cuda_device, BackendChoice* chosen) {
  const BackendChoice choice = choose_world_backend(config, buffers, cuda_device);
  if (chosen != nullptr) *chosen = choice;
  if (choice.backend == Backend::kNccl) {
    // Note [Host buffers beside NCCL]
    std::unique_ptr<Communicator> nccl =
        make_nccl_communicator(MPI_COMM_WORLD, kernels::Stream::cuda(choice.cuda_device));
    return make_routed_communicator(
        std::move(nccl), make_mpi_world_communicator(config, /*device_buffers=*/true,
                                                     chosen ? &chosen->hierarchy : nullptr));
  }
  return make_mpi_world_communicator(config, buffers == Device::kCuda,
                                     chosen ? &chosen->hierarchy : nullptr);
}

}  // namespace gw
