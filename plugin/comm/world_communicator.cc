#include "plugin/comm/world_communicator.h"

#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <initializer_list>
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

// The device this rank would use, and the world rank of another rank of its node that would use
// the same physical device (-1: none). Collective over `world`.
int shared_device_peer(MPI_Comm world, int world_rank, int device, bool has_device) {
  MPI_Comm node = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL, &node),
            "MPI_Comm_split_type");
  struct Free {
    MPI_Comm* c;
    ~Free() { MPI_Comm_free(c); }
  } free_node{&node};
  MPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN);
  int node_size = 1;
  MPI_Comm_size(node, &node_size);
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
  std::vector<Entry> all(static_cast<std::size_t>(node_size));
  check_mpi(MPI_Allgather(&mine, static_cast<int>(sizeof mine), MPI_BYTE, all.data(),
                          static_cast<int>(sizeof mine), MPI_BYTE, node),
            "MPI_Allgather");
  if (mine.bus_id[0] == '\0') return -1;
  for (const Entry& other : all) {
    if (other.world_rank != world_rank && std::strcmp(other.bus_id, mine.bus_id) == 0) {
      return other.world_rank;
    }
  }
  return -1;
}

int node_local_rank(MPI_Comm world, int world_rank) {
  MPI_Comm node = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL, &node),
            "MPI_Comm_split_type");
  int local = 0;
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  return local;
}

std::string join(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : separator) + p;
  return out;
}

}  // namespace

int default_cuda_device() {
  if (!MpiRuntime::initialized()) {
    throw CommError("default_cuda_device: MPI is not initialised (create an MpiRuntime first)");
  }
  MPI_Comm world = MPI_COMM_NULL;  // a duplicate: its collective never matches the program's
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &world), "MPI_Comm_dup");
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  const int local_rank = node_local_rank(world, rank);
  MPI_Comm_free(&world);
  const int device_count = kernels::cuda_device_count();
  return device_count == 0 ? -1 : local_rank % device_count;
}

BackendChoice choose_world_backend(const config::Config& config, Device buffers, int cuda_device) {
  if (!MpiRuntime::initialized()) {
    throw CommError("choose_world_backend: MPI is not initialised (create an MpiRuntime first)");
  }
  const Backend requested = parse_backend(config.get_string(config::keys::kBackend));
  MPI_Comm world = MPI_COMM_NULL;  // a duplicate: these collectives never match the program's
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &world), "MPI_Comm_dup");
  struct Free {
    MPI_Comm* c;
    ~Free() { MPI_Comm_free(c); }
  } free_world{&world};
  MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);

  const int device_count = kernels::cuda_device_count();
  const int local_rank = node_local_rank(world, rank);  // collective: every rank asks
  const int device = device_count == 0  ? -1
                     : cuda_device >= 0 ? cuda_device
                                        : local_rank % device_count;
  RankFacts mine;
  mine.requested = static_cast<int>(requested);
  mine.buffers_on_device = buffers == Device::kCuda ? 1 : 0;
  mine.has_device = device >= 0 && device < device_count ? 1 : 0;
  mine.shares_with = shared_device_peer(world, rank, device, mine.has_device != 0);
  std::vector<RankFacts> all(static_cast<std::size_t>(size));
  static_assert(sizeof(RankFacts) == kFactInts * sizeof(int), "RankFacts is sent as ints");
  check_mpi(MPI_Allgather(&mine, kFactInts, MPI_INT, all.data(), kFactInts, MPI_INT, world),
            "MPI_Allgather");

  // From here on every rank reads the same table, and so decides and words its errors alike.
  for (int r = 1; r < size; ++r) {
    if (all[static_cast<std::size_t>(r)].requested != all[0].requested) {
      fail_everywhere(std::string(config::keys::kBackend) + " differs across ranks (rank 0 '" +
                      to_string(static_cast<Backend>(all[0].requested)) + "', rank " +
                      std::to_string(r) + " '" +
                      to_string(static_cast<Backend>(all[static_cast<std::size_t>(r)].requested)) +
                      "'): every rank must use the same backend. Set the same value on every rank "
                      "(accepted: auto, mpi, nccl)");
    }
  }
  std::vector<std::string> why_not;  // why NCCL cannot work, if it cannot
  if (!nccl_built()) why_not.push_back("gradwire was built without NCCL");
  bool host_buffers = false;
  std::vector<std::string> without_device;
  std::string sharing;
  for (int r = 0; r < size; ++r) {
    const RankFacts& f = all[static_cast<std::size_t>(r)];
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
  if (choice.backend == Backend::kNccl) choice.cuda_device = device;
  return choice;
}

namespace {

// Note [Host buffers beside NCCL]
class RoutedCommunicator final : public Communicator {
 public:
  RoutedCommunicator(std::unique_ptr<Communicator> device, std::unique_ptr<Communicator> host)
      : device_(std::move(device)), host_(std::move(host)) {
    if (!device_ || !host_) {
      throw std::invalid_argument("make_routed_communicator: a null communicator");
    }
    if (device_->rank() != host_->rank() || device_->size() != host_->size()) {
      throw std::invalid_argument(
          "make_routed_communicator: the communicators' ranks differ (" +
          std::to_string(device_->rank()) + " of " + std::to_string(device_->size()) + " and " +
          std::to_string(host_->rank()) + " of " + std::to_string(host_->size()) + ")");
    }
  }
  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }

  WorkHandle start(const Collective& c) override { return pick(c).start(c); }
  void run(const Collective& c) override { pick(c).run(c); }
  void barrier() override { host_->barrier(); }
  std::vector<int> node_of_rank() const override { return host_->node_of_rank(); }

 private:
  // Given a stream its inputs are ready on, the collective's buffers are that stream's memory.
  // Otherwise a null pointer (an empty block, which one rank may have where another has not) says
  // nothing of where the program keeps its buffers, so the others decide: device when every other
  // one is on a CUDA device, host when one is not or there is none. Unlike an allgatherv's, an
  // alltoallv's buffers may both be empty on one rank only (it sends and receives nothing) while
  // the others' are on a device; were both null, that rank alone would route to the host. A
  // caller whose blocks may all be empty passes non-null buffers.
  Communicator& pick(const Collective& c) {
    if (c.ready_on != nullptr) return c.ready_on->is_host() ? *host_ : *device_;
    bool any = false;
    for (const void* p : {c.send, static_cast<const void*>(c.recv)}) {
      if (p == nullptr) continue;
      if (kernels::cuda_device_of(p) < 0) return *host_;
      any = true;
    }
    return any ? *device_ : *host_;
  }

  std::unique_ptr<Communicator> device_, host_;
};

}  // namespace

std::unique_ptr<Communicator> make_routed_communicator(std::unique_ptr<Communicator> device,
                                                       std::unique_ptr<Communicator> host) {
  return std::make_unique<RoutedCommunicator>(std::move(device), std::move(host));
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
