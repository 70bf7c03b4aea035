// The split sparse allreduce over a communicator's two levels: a node's pairs merged inside it
// before they cross (Note [Sparse allreduce over two levels]).
#pragma once

#include <memory>
#include <vector>

#include "compressors/split_ranges.h"
#include "plugin/exchange/message_counts.h"
#include "plugin/exchange/sparse_exchange.h"

namespace gw::exchange {

// Note [Sparse allreduce over two levels]
// On a communicator with two levels (Communicator::levels(): N nodes of L ranks) the split
// (Note [Sparse allreduce by split]) runs at both, so that what crosses the network is one node's
// merged pairs rather than every rank's. The encoder cuts each tensor into n = N L ranges as
// before; range r belongs to node r / L's local rank r % L (its owner).
//  1. Node-local alltoallv: local rank q receives its node's pairs of the ranges m L + q, one per
//     node m (counts first).
//  2. It sums each of those ranges over its node (in local rank order) and keeps the largest
//     node_merge_k = ceil(k / n) of each sum, one share: a node's merged message is about as long
//     as one rank's. What it does not keep goes into its own residual (SparseReselector).
//  3. Cross alltoallv among the ranks with this local rank: each node's merged pairs of range
//     m L + q go to node m, the range's owner.
//  4. The owner sums the N nodes' messages, in node order, and keeps split_k = 2 ceil(k / n), as
//     the flat split; the rest goes into its residual.
//  5. Cross allgatherv of the kept pairs, then node-local allgatherv of the N messages each rank
//     now holds, so that every rank has every range's kept pairs and writes them as the flat split
//     does.
// Steps 2 and 4 work on the pairs alone (compressors::RangeMerge: the received pairs added into
// sums that are kept zero between steps, their distinct indices the candidates,
// SparseReselector::reselect_among), never on every element of a range: a rank merges 1/L of each
// tensor, and a pass over it would cost more than the bytes it saves. The network carries steps 3
// and 5: about k (N - 1) / N + 2k (N - 1) / N pairs per node, where the flat split sends L times
// that across (each of a node's ranks sends its own). Nothing is lost: whatever steps 2 and 4 drop
// stays in the dropping rank's residual, so summed over the ranks residuals and applied values
// equal what was accumulated, as in the flat split. The dropped values of step 2 go to the merging
// rank rather than back to the ranks that sent them: the node-wide sum is what error feedback
// conserves, and a message back would cost a round inside the node. Every message is checked
// against its range before anything is added, and an error names the world rank that sent it (or,
// in step 5, that kept it). The applied values differ from the flat split's: step 2 ranks a node's
// sums rather than the world's.

class TwoLevelSplit final : public SparseExchange {
 public:
  // Destination q of this node gets the ranges m * L + q of every node m.
  compressors::SplitPacking packing(Communicator& comm) const override;
  // `comm` must have levels() with more than one rank at each.
  compressors::SparseInbox& exchange(Communicator& comm, const SparseInput& in,
                                     TrafficKind kind) override;

 private:
  struct Shape;  // this step's sizes, ranks and senders (two_level_split.cc)
  void to_node_mergers(const Shape& s, const SparseInput& in, TrafficKind kind);
  void merge_in_node(const Shape& s, const SparseInput& in);
  void to_owners(const Shape& s, const SparseInput& in, TrafficKind kind);
  void share_kept(const Shape& s, const SparseInput& in, TrafficKind kind);

  // Who sent each entry of steps 1, 3 and 5 (their errors name world ranks).
  struct WorldSenders {
    std::vector<int> local, cross, entry;
  } senders_;
  // Steps 1 and 2: the node's pairs of the ranges this rank merges, one inbox per range (each
  // range's messages in local rank order), summed in `sums_views_` and merged.
  MessageCounts in_node_counts_;
  compressors::SparseInbox in_node_;
  std::vector<compressors::SparseInbox> by_range_;
  std::vector<compressors::BucketView> sums_views_;
  compressors::ExchangePlan node_plan_;  // what a node's merged message may hold
  std::vector<compressors::SparseMessageWriter> merged_;
  struct Packed {
    std::vector<const compressors::SparseMessageWriter*> order;
    kernels::Buffer<std::uint32_t> words;
    std::vector<std::size_t> lengths;
  } merged_packed_;
  compressors::RangeMerge merge_;
  // Steps 3 and 4: the nodes' merged pairs of the range this rank owns, and what it keeps.
  MessageCounts across_counts_;
  compressors::SparseInbox across_;
  compressors::BucketView mine_;
  compressors::KeptPairs kept_;
  // Step 5: the kept pairs across, then inside the node.
  MessageCounts cross_counts_, local_counts_;
  compressors::SparseInbox node_kept_;
  std::vector<std::int64_t> cross_lengths_;
  std::vector<std::size_t> range_of_entry_;
  compressors::SparseInbox all_kept_;
};

}  // namespace gw::exchange
