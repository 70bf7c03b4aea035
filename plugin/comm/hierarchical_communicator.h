// A Communicator over two levels, nodes and the ranks of each node: its allreduce reduces inside
// each node first, so that the network between nodes carries one node's share instead of every
// rank's (Note [Hierarchical allreduce] in hierarchical_communicator.cc). The node groups come from
// find_node_groups (plugin/comm/mpi/node_groups.h).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "plugin/comm/communicator.h"

namespace gw {

// What the world communicator's maker chose for GRADWIRE_HIERARCHICAL, for reports.
struct HierarchyChoice {
  bool enabled = false;
  int nodes = 1;       // the nodes found
  int local_size = 1;  // ranks per node (the first node's where they differ)
  std::string source;  // where the nodes came from, in words
  std::string reason;  // why two levels or one, in words
};

class HierarchicalCommunicator final : public Communicator {
 public:
  // flat: every rank, in world order, for the collectives that have no two-level form (allgatherv,
  // alltoallv, broadcast, barrier). local: the ranks of this rank's node, in world order. cross:
  // the ranks with this rank's local rank, one per node, in node order. Every node has the same
  // number of ranks: flat.size() == local.size() x cross.size() (else invalid_argument).
  HierarchicalCommunicator(std::unique_ptr<Communicator> flat, std::unique_ptr<Communicator> local,
                           std::unique_ptr<Communicator> cross);

  int rank() const override { return flat_->rank(); }
  int size() const override { return flat_->size(); }

  // An allreduce runs the two levels (Note [Hierarchical allreduce]) on host buffers only (a CUDA
  // device buffer throws CommError before anything is sent); its result has the same bits on every
  // rank. The async form runs the three stages before it returns and hands back a completed Work:
  // overlap comes from the engine thread that calls it. Every other collective is the flat one.
  WorkHandle start(const Collective& c) override;
  void run(const Collective& c) override;
  void barrier() override { flat_->barrier(); }
  std::vector<int> node_of_rank() const override { return flat_->node_of_rank(); }
  const Levels* levels() override { return &levels_; }

  Communicator& flat() { return *flat_; }
  const Communicator& flat() const { return *flat_; }
  Communicator& local() { return *local_; }
  Communicator& cross() { return *cross_; }
  const Communicator& local() const { return *local_; }
  const Communicator& cross() const { return *cross_; }

  // The shard of an allreduce of `count` elements that local rank `local_rank` of `local_size`
  // reduces across the nodes: count / local_size elements, one more for the first count %
  // local_size local ranks, back to back in local-rank order.
  static std::size_t shard_count(std::size_t count, int local_size, int local_rank);
  static std::size_t shard_offset(std::size_t count, int local_size, int local_rank);

 private:
  void two_level_allreduce(const Collective& c);

  std::unique_ptr<Communicator> flat_, local_, cross_;
  Levels levels_;
  std::vector<unsigned char> shard_;  // this rank's reduced shard, sent by the node-local allgather
};

}  // namespace gw
