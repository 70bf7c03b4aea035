#include "plugin/comm/mpi/node_groups.h"

#include <map>
#include <string>
#include <vector>

#include "plugin/comm/staging_communicator.h"
#include "plugin/config/config.h"

namespace gw {

// Note [Node groups]
// The two-level exchange (Note [Hierarchical allreduce]) needs every node to hold the same number
// of ranks, so that local rank i of every node can own shard i. The groups come either from MPI,
// which knows which ranks share memory (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED: one group
// per host), or from a local size L given by the user, which makes every L consecutive ranks a
// node (launch with ranks placed by slot, so that consecutive ranks share a host). The second form
// is for a launcher that places ranks so, and for virtual clusters whose hosts share one machine,
// where MPI sees a single node. Every rank gathers every rank's node key (the lowest world rank of
// its node) and checks the same table, so an error has the same text on every rank and comes
// before any collective of the new communicators.

namespace {

[[noreturn]] void fail_everywhere(const std::string& message) {
  throw config::ConfigError(message, config::ConfigError::SameOnEveryRank{});
}

void check(int rc, const char* call, int rank) {
  if (rc != MPI_SUCCESS) {
    throw CommError(std::string(call) + " failed on rank " + std::to_string(rank) +
                    " while finding the node groups");
  }
}

}  // namespace

NodeGroups find_node_groups(MPI_Comm comm, int local_size_setting, bool require_equal) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int my_key = 0;  // the lowest world rank of this rank's node
  if (local_size_setting > 0) {
    if (size % local_size_setting != 0) {
      fail_everywhere("GRADWIRE_HIERARCHY_LOCAL_SIZE=" + std::to_string(local_size_setting) +
                      ": nodes of " + std::to_string(local_size_setting) +
                      " ranks do not divide the " + std::to_string(size) +
                      " ranks of the job; accepted: a local size that divides the world size, " +
                      "or 0 (the nodes MPI reports)");
    }
    my_key = rank / local_size_setting * local_size_setting;
  } else {
    MPI_Comm node = MPI_COMM_NULL;
    check(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node),
          "MPI_Comm_split_type", rank);
    int lowest = rank;
    const int rc = MPI_Allreduce(&rank, &lowest, 1, MPI_INT, MPI_MIN, node);
    MPI_Comm_free(&node);
    check(rc, "MPI_Allreduce", rank);
    my_key = lowest;
  }
  std::vector<int> keys(static_cast<std::size_t>(size));
  check(MPI_Allgather(&my_key, 1, MPI_INT, keys.data(), 1, MPI_INT, comm), "MPI_Allgather", rank);

  // From here every rank reads the same table. Nodes are numbered by their lowest rank.
  std::map<int, int> ranks_of;  // node key -> ranks
  for (int k : keys) ++ranks_of[k];
  NodeGroups g;
  g.nodes = static_cast<int>(ranks_of.size());
  g.local_size = ranks_of.begin()->second;
  std::string sizes;
  bool equal = true;
  for (const auto& [k, n] : ranks_of) {
    equal = equal && n == g.local_size;
    sizes += (sizes.empty() ? "" : ", ") + std::to_string(n);
  }
  g.equal = equal;
  g.sizes = sizes;
  if (!equal && require_equal) {
    fail_everywhere(
        "the hierarchical exchange needs the same number of ranks on every node, but "
        "the " +
        std::to_string(g.nodes) + " nodes MPI reports hold " + sizes +
        " ranks; launch the same number per node, set GRADWIRE_HIERARCHY_LOCAL_SIZE to group "
        "the ranks yourself, or GRADWIRE_HIERARCHICAL=0 for the flat exchange");
  }
  g.node = static_cast<int>(std::distance(ranks_of.begin(), ranks_of.find(my_key)));
  g.local_rank = 0;
  for (int r = 0; r < rank; ++r) {
    if (keys[static_cast<std::size_t>(r)] == my_key) ++g.local_rank;
  }
  for (int k : keys) {
    g.node_of_rank.push_back(static_cast<int>(std::distance(ranks_of.begin(), ranks_of.find(k))));
  }
  g.source = local_size_setting > 0 ? "local size " + std::to_string(local_size_setting)
                                    : std::string("MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)");
  return g;
}

std::unique_ptr<HierarchicalCommunicator> make_hierarchical_mpi_communicator(
    MPI_Comm comm, const NodeGroups& groups, MpiWait wait) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm local = MPI_COMM_NULL, cross = MPI_COMM_NULL;
  check(MPI_Comm_split(comm, groups.node, groups.local_rank, &local), "MPI_Comm_split", rank);
  const int rc = MPI_Comm_split(comm, groups.local_rank, groups.node, &cross);
  if (rc != MPI_SUCCESS) MPI_Comm_free(&local);
  check(rc, "MPI_Comm_split", rank);
  // The MpiCommunicators duplicate what they are given, so the splits are freed here.
  struct Free {
    MPI_Comm* a;
    MPI_Comm* b;
    ~Free() {
      MPI_Comm_free(a);
      MPI_Comm_free(b);
    }
  } free_splits{&local, &cross};
  auto flat = std::make_unique<MpiCommunicator>(comm, wait);
  flat->set_node_of_rank(groups.node_of_rank);
  // Each level stages device buffers itself (Note [Staging device buffers]).
  return std::make_unique<HierarchicalCommunicator>(
      with_device_staging(std::move(flat)),
      with_device_staging(std::make_unique<MpiCommunicator>(local, wait)),
      with_device_staging(std::make_unique<MpiCommunicator>(cross, wait)));
}

}  // namespace gw
