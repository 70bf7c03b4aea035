// The job's nodes for the two-level exchange (Note [Node groups] in node_groups.cc): which ranks
// share a node, found by MPI or set by the user, and the MPI communicators of the two levels.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "plugin/comm/hierarchical_communicator.h"
#include "plugin/comm/mpi/mpi_communicator.h"

namespace gw {

struct NodeGroups {
  int nodes = 1;       // how many nodes
  int node = 0;        // this rank's node, 0 .. nodes-1, in the order of their lowest ranks
  int local_size = 1;  // ranks per node, the same on every node
  int local_rank = 0;  // this rank's place in its node, in world-rank order
  std::string source;  // where the groups came from, in words
  std::vector<int> node_of_rank;  // entry r: rank r's node
  bool equal = true;              // every node holds local_size ranks
  std::string sizes;              // each node's ranks, "2, 2"
};

// Collective over `comm`. local_size_setting 0: the nodes MPI reports
// (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)); above 0: blocks of that many consecutive ranks
// (the user's grouping). Throws config::ConfigError with the same text on every rank
// when the setting does not divide the world size, or, with require_equal, when the nodes MPI
// reports have different numbers of ranks (naming the sizes found; without it, `equal` says so and
// local_size is the first node's).
NodeGroups find_node_groups(MPI_Comm comm, int local_size_setting, bool require_equal = true);

// A HierarchicalCommunicator over `comm` for `groups`: the flat level a duplicate of comm, the
// local and cross levels MpiCommunicators over MPI_Comm_split of it, all waiting as `wait` says,
// each with a StagingCommunicator over it where CUDA is usable. Collective over `comm`.
std::unique_ptr<HierarchicalCommunicator> make_hierarchical_mpi_communicator(
    MPI_Comm comm, const NodeGroups& groups, MpiWait wait = MpiWait::kAuto);

}  // namespace gw
