#include "plugin/comm/hierarchical_communicator.h"

#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/stream.h"

namespace gw {

// Note [Hierarchical allreduce]
// Real clusters have two speeds: fast links inside a node (shared memory, NVLink) and a slower
// network between nodes. A flat ring allreduce over N nodes of L ranks each sends 2(NL-1)/(NL) of
// the buffer over every ring edge, and with the ranks of a node next to each other in the ring
// one edge leaves each node: the node's network link carries 2(NL-1)/(NL) x bytes each way. The
// two-level allreduce here makes that 2(N-1)/N x bytes, split over the node's L ranks:
//   1. node-local allreduce: every rank of a node holds the node's sum;
//   2. local rank i allreduces shard i of it (shard_count / shard_offset: L near-equal slices,
//      back to back) with local rank i of every other node, over `cross`;
//   3. node-local allgather of the shards, so every rank holds the whole sum.
// At 2 nodes x 2 ranks that is 1/2 against 3/4 of the bytes on each node's link (0.67x).
// Stage 1 is an allreduce rather than a reduce-scatter because Communicator has no
// reduce-scatter; it moves twice a reduce-scatter's bytes inside the node, where the links are
// fast. Every rank ends with the same bits: each shard is reduced once, by one cross allreduce,
// and handed to the node's ranks by the allgather. The sum's order differs from a flat
// allreduce's, so the two agree exactly only where the sums are exact (integers, or floats whose
// partial sums round nowhere) and otherwise to rounding.

HierarchicalCommunicator::HierarchicalCommunicator(std::unique_ptr<Communicator> flat,
                                                   std::unique_ptr<Communicator> local,
                                                   std::unique_ptr<Communicator> cross)
    : flat_(std::move(flat)), local_(std::move(local)), cross_(std::move(cross)) {
  if (!flat_ || !local_ || !cross_) {
    throw std::invalid_argument("HierarchicalCommunicator: a null communicator");
  }
  if (flat_->size() != local_->size() * cross_->size()) {
    throw std::invalid_argument("HierarchicalCommunicator: " + std::to_string(flat_->size()) +
                                " ranks are not " + std::to_string(cross_->size()) + " nodes x " +
                                std::to_string(local_->size()) + " ranks each");
  }
  levels_.local = local_.get();
  levels_.cross = cross_.get();
  // Node j's local rank q is the q-th rank of node j in world order (find_node_groups numbers
  // them so); without nodes from the flat communicator, nodes are consecutive blocks.
  const std::vector<int> nodes = flat_->node_of_rank();
  const auto l = static_cast<std::size_t>(local_->size());
  levels_.world_rank.assign(static_cast<std::size_t>(flat_->size()), 0);
  if (nodes.size() != levels_.world_rank.size()) {
    for (std::size_t r = 0; r < levels_.world_rank.size(); ++r)
      levels_.world_rank[r] = static_cast<int>(r);
    return;
  }
  std::vector<std::size_t> seen(static_cast<std::size_t>(cross_->size()), 0);
  for (std::size_t r = 0; r < nodes.size(); ++r) {
    const auto j = static_cast<std::size_t>(nodes[r]);
    if (j >= seen.size() || seen[j] >= l) {
      throw std::invalid_argument("HierarchicalCommunicator: rank " + std::to_string(r) +
                                  " is on node " + std::to_string(nodes[r]) +
                                  ", which is not one of " + std::to_string(seen.size()) +
                                  " nodes of " + std::to_string(l) + " ranks");
    }
    levels_.world_rank[j * l + seen[j]++] = static_cast<int>(r);
  }
}

std::size_t HierarchicalCommunicator::shard_count(std::size_t count, int local_size,
                                                  int local_rank) {
  const auto l = static_cast<std::size_t>(local_size);
  const auto i = static_cast<std::size_t>(local_rank);
  return count / l + (i < count % l ? 1 : 0);
}

std::size_t HierarchicalCommunicator::shard_offset(std::size_t count, int local_size,
                                                   int local_rank) {
  const auto l = static_cast<std::size_t>(local_size);
  const auto i = static_cast<std::size_t>(local_rank);
  const std::size_t extra = count % l;
  return i * (count / l) + (i < extra ? i : extra);
}

WorkHandle HierarchicalCommunicator::start(const Collective& c) {
  if (c.op != CollectiveOp::kAllreduce) return flat_->start(c);
  two_level_allreduce(c);
  return completed_work();
}

void HierarchicalCommunicator::run(const Collective& c) {
  if (c.op != CollectiveOp::kAllreduce) return flat_->run(c);
  two_level_allreduce(c);
}

// Note [Hierarchical allreduce]
void HierarchicalCommunicator::two_level_allreduce(const Collective& c) {
  const std::size_t count = c.count;
  const bool on_device =
      c.ready_on != nullptr ? !c.ready_on->is_host() : kernels::device_of(c.recv) == Device::kCuda;
  if (count > 0 && on_device) {
    throw CommError("hierarchical allreduce on rank " + std::to_string(rank()) +
                    ": the buffer is in CUDA device memory, and the two-level exchange carries "
                    "host buffers only; exchange device buffers over the flat communicator");
  }
  local_->allreduce(c.recv, count, c.type, c.reduce, c.kind);
  const int l = local_->size();
  const int i = local_->rank();
  const std::size_t elem = size_of(c.type);
  auto* bytes = static_cast<unsigned char*>(c.recv);
  const std::size_t mine = shard_count(count, l, i);
  unsigned char* shard = bytes + shard_offset(count, l, i) * elem;
  // Every cross group calls its allreduce, an empty shard included, so that the collectives of
  // each group match whatever the count.
  cross_->allreduce(mine > 0 ? shard : nullptr, mine, c.type, c.reduce, c.kind);
  if (l == 1) return;
  // The allgather's send and receive buffers must not overlap (MPI forbids aliased buffers), so
  // the shard goes out from a copy.
  shard_.resize(mine * elem);
  if (mine > 0) std::memcpy(shard_.data(), shard, mine * elem);
  std::vector<std::size_t> counts(static_cast<std::size_t>(l));
  for (int r = 0; r < l; ++r) counts[static_cast<std::size_t>(r)] = shard_count(count, l, r);
  local_->allgatherv(mine > 0 ? shard_.data() : nullptr, mine, count > 0 ? c.recv : nullptr,
                     std::move(counts), c.type, c.kind);
}

}  // namespace gw
