#include "plugin/exchange/two_level_split.h"

namespace gw::exchange {

using compressors::SparseInbox;

// Range r is owned by node r / ln's local rank r % ln. This rank merges its node's pairs of the
// ranges m * ln + me (one per node m) and owns range node * ln + me.
struct TwoLevelSplit::Shape {
  const Levels& levels;
  std::size_t ln, nn, n, me, node;
  explicit Shape(const Levels& l)
      : levels(l),
        ln(static_cast<std::size_t>(l.local->size())),
        nn(static_cast<std::size_t>(l.cross->size())),
        n(ln * nn),
        me(static_cast<std::size_t>(l.local->rank())),
        node(static_cast<std::size_t>(l.cross->rank())) {}
};

compressors::SplitPacking TwoLevelSplit::packing(Communicator& comm) const {
  const Levels& l = *comm.levels();
  return {static_cast<std::size_t>(l.local->size()), static_cast<std::size_t>(l.cross->size())};
}

// Note [Sparse allreduce over two levels]
SparseInbox& TwoLevelSplit::exchange(Communicator& comm, const SparseInput& in, TrafficKind kind) {
  const Shape s(*comm.levels());
  senders_.local.resize(s.ln);
  for (std::size_t q = 0; q < s.ln; ++q) senders_.local[q] = s.levels.world_rank[s.node * s.ln + q];
  senders_.cross.resize(s.nn);
  for (std::size_t m = 0; m < s.nn; ++m) senders_.cross[m] = s.levels.world_rank[m * s.ln + s.me];
  to_node_mergers(s, in, kind);
  merge_in_node(s, in);
  to_owners(s, in, kind);
  share_kept(s, in, kind);
  return all_kept_;
}

void TwoLevelSplit::to_node_mergers(const Shape& s, const SparseInput& in, TrafficKind kind) {
  // Step 1: local rank q gets this rank's pairs of the ranges m * ln + q, m = 0..nn-1 (sizes
  // first: nn per local rank), packed so by the encode.
  senders_.entry.resize(s.ln * s.nn);
  for (std::size_t p = 0; p < s.ln; ++p)
    for (std::size_t m = 0; m < s.nn; ++m) senders_.entry[p * s.nn + m] = senders_.local[p];
  const std::vector<std::size_t>& out = in.payload.packed_words();
  std::uint32_t* received =
      in_node_counts_.alltoall(*s.levels.local, out, s.nn, in_node_, in.bucket,
                               in.payload.plan(), &senders_.entry, in.stream);
  s.levels.local->alltoallv(in.payload.packed(), per_destination(out, s.nn), received,
                            in_node_.per_sender(s.nn), DataType::kInt32, kind);
  // What arrived is sender-major; each range's ln messages go to an inbox of their own, in local
  // rank order.
  by_range_.resize(s.nn);
  for (std::size_t m = 0; m < s.nn; ++m)
    by_range_[m].take_block(in_node_, s.nn, m, senders_.local, in.stream);
}

void TwoLevelSplit::merge_in_node(const Shape& s, const SparseInput& in) {
  compressors::SparseReselector& reselector = needs_reselector(in);
  const compressors::ExchangePlan& plan = in.payload.plan();
  // The sums: the nn ranges merged here, then the range this rank owns, back to back.
  std::size_t sums_numel = 0;
  for (std::size_t m = 0; m < s.nn; ++m)
    sums_numel += compressors::range_numel(in.bucket, plan, s.n, m * s.ln + s.me);
  sums_numel += compressors::range_numel(in.bucket, plan, s.n, s.node * s.ln + s.me);
  float* sums = merge_.zeroed_sums(sums_numel, in.stream);
  sums_views_.resize(s.nn);
  std::size_t at = 0;
  for (std::size_t m = 0; m < s.nn; ++m) {
    compressors::lay_out_range(in.bucket, plan, s.n, m * s.ln + s.me, sums + at, sums_views_[m]);
    at += sums_views_[m].numel;
    by_range_[m].check(sums_views_[m], in.stream);
  }
  compressors::lay_out_range(in.bucket, plan, s.n, s.node * s.ln + s.me, sums + at, mine_);

  // Step 2: the node's sum of each range, cut to one share of k (node_merge_k): the rest goes
  // into this rank's residual.
  compressors::cut_plan(plan, s.n, compressors::node_merge_k, node_plan_);
  merged_.resize(s.nn);
  for (std::size_t m = 0; m < s.nn; ++m) {
    merged_[m].clear();
    merged_[m].reserve(compressors::max_message_words(node_plan_), in.stream);
    merge_.merge(reselector, in.bucket, plan, node_plan_, s.n, m * s.ln + s.me, sums_views_[m],
                 by_range_[m], merged_[m], in.stream);
  }
}

void TwoLevelSplit::to_owners(const Shape& s, const SparseInput& in, TrafficKind kind) {
  compressors::SparseReselector& reselector = needs_reselector(in);
  // Step 3: node m's rank `me` gets this node's merged pairs of range m * ln + me (sizes first).
  Packed& out = merged_packed_;
  out.order.clear();
  for (const compressors::SparseMessageWriter& w : merged_) out.order.push_back(&w);
  compressors::pack_messages(out.order, out.words, out.lengths, in.stream);
  std::uint32_t* merged = across_counts_.alltoall(*s.levels.cross, out.lengths, 1, across_,
                                                  in.bucket, node_plan_, &senders_.cross,
                                                  in.stream);
  in.stream.synchronize();
  s.levels.cross->alltoallv(out.words.data(), out.lengths, merged, across_.words(),
                            DataType::kInt32, kind);
  across_.check(mine_, in.stream);
  // Step 4: the owner keeps the largest of the nodes' sums (split_k, as the flat split).
  kept_.prepare(in.payload.plan(), s.n, compressors::split_k, in.stream);
  merge_.merge(reselector, in.bucket, node_plan_, kept_.plan, s.n, s.node * s.ln + s.me, mine_,
               across_, kept_.message, in.stream);
  merge_.all_merged();  // every merge left its sums zero
}

void TwoLevelSplit::share_kept(const Shape& s, const SparseInput& in, TrafficKind kind) {
  // Step 5: the kept pairs across (rank `me` of every node), then inside the node, so that every
  // rank holds every range's; the decode checks each against its range, naming the rank that
  // kept it.
  const auto length = static_cast<std::int64_t>(kept_.message.size());
  std::uint32_t* node_kept =
      cross_counts_.gather(*s.levels.cross, &length, 1, node_kept_, in.bucket, kept_.plan,
                           &senders_.cross, SparseInbox::Layout::kWhole, in.stream);
  in.stream.synchronize();
  s.levels.cross->allgatherv(kept_.message.data(), kept_.message.size(), node_kept,
                             node_kept_.words(), DataType::kInt32, kind);
  cross_lengths_.resize(s.nn);
  for (std::size_t m = 0; m < s.nn; ++m)
    cross_lengths_[m] = static_cast<std::int64_t>(node_kept_.words()[m]);
  // Entry q * nn + m is range m * ln + q's, kept by that range's owner.
  for (std::size_t q = 0; q < s.ln; ++q)
    for (std::size_t m = 0; m < s.nn; ++m)
      senders_.entry[q * s.nn + m] = s.levels.world_rank[m * s.ln + q];
  std::uint32_t* all = local_counts_.gather(*s.levels.local, cross_lengths_.data(), s.nn,
                                            all_kept_, in.bucket, kept_.plan, &senders_.entry,
                                            SparseInbox::Layout::kRanges, in.stream);
  s.levels.local->allgatherv(node_kept, node_kept_.total(), all, all_kept_.per_sender(s.nn),
                             DataType::kInt32, kind);
  range_of_entry_.resize(s.n);
  for (std::size_t q = 0; q < s.ln; ++q)
    for (std::size_t m = 0; m < s.nn; ++m) range_of_entry_[q * s.nn + m] = m * s.ln + q;
  all_kept_.set_range_of_entry(range_of_entry_);
}

}  // namespace gw::exchange
