#include "plugin/exchange/two_level_split.h"

#include <algorithm>

#include "kernels/sparse.h"
#include "plugin/exchange/sparse_split.h"

namespace gw::exchange {

float* RangeMerge::zeroed_sums(std::size_t numel, const kernels::Stream& stream) {
  float* sums = sums_.reserve_discard(std::max<std::size_t>(numel, 1), stream);
  if (!zeroed_ || numel > zeroed_numel_) {
    kernels::fill_zero(sums, std::max(numel, zeroed_numel_) * sizeof(float), stream);
    zeroed_numel_ = std::max(numel, zeroed_numel_);
  }
  zeroed_ = false;  // until the merges have left them zero again
  return sums;
}

void RangeMerge::merge(compressors::SparseReselector& reselector,
                       const compressors::BucketView& bucket,
                       const compressors::ExchangePlan& plan,
                       const compressors::ExchangePlan& budget, std::size_t ranges, std::size_t r,
                       const compressors::BucketView& sums, const std::uint32_t* words,
                       const compressors::SparseSegments& segments,
                       compressors::SparseMessageWriter& out, const kernels::Stream& stream) {
  const std::size_t tensors = plan.sparse.size();
  const std::size_t senders = tensors == 0 ? 0 : segments.count.size() / tensors;
  const std::uint32_t* pairs = segments.in_decoded ? segments.decoded.data() : words;
  for (std::size_t t = 0; t < tensors; ++t) {
    const compressors::TensorSlot& slot = bucket.tensors[plan.sparse[t]];
    float* part = sums.data + sums.tensors[plan.sparse[t]].offset;
    std::size_t total = 0;
    for (std::size_t s = 0; s < senders; ++s) total += segments.count[s * tensors + t];
    std::uint32_t* candidates =
        candidates_.reserve_discard(std::max<std::size_t>(total, 1), stream);
    std::size_t at = 0;
    for (std::size_t s = 0; s < senders; ++s) {
      const std::uint32_t* segment = pairs + segments.offset[s * tensors + t];
      const std::size_t count = segments.count[s * tensors + t];
      kernels::scatter_add_pairs(segment, count, part, stream);  // in sender order
      kernels::pair_indices(segment, count, candidates + at, stream);
      at += count;
    }
    const std::size_t distinct = kernels::sort_unique(candidates, at, stream);
    reselector.reselect_among(slot, part, compressors::split_range(slot.numel, ranges, r).begin,
                              candidates, distinct, budget.k[t], plan.sparse_wire, out);
  }
}

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

// Note [Sparse allreduce over two levels]
void TwoLevelSplit::exchange(Communicator& comm, const SparseInput& in, TrafficKind kind) {
  const Shape s(*comm.levels());
  senders_.local.resize(s.ln);
  for (std::size_t q = 0; q < s.ln; ++q) senders_.local[q] = s.levels.world_rank[s.node * s.ln + q];
  senders_.cross.resize(s.nn);
  for (std::size_t m = 0; m < s.nn; ++m) senders_.cross[m] = s.levels.world_rank[m * s.ln + s.me];
  to_node_mergers(s, in, kind);
  merge_in_node(s, in);
  to_owners(s, in, kind);
  share_kept(s, in, kind);
}

void TwoLevelSplit::to_node_mergers(const Shape& s, const SparseInput& in, TrafficKind kind) {
  const kernels::Stream& stream = in.stream;
  // Step 1: local rank q gets this rank's pairs of the ranges m * ln + q, m = 0..nn-1 (sizes
  // first: nn per local rank).
  out_.clear();
  for (std::size_t q = 0; q < s.ln; ++q)
    for (std::size_t m = 0; m < s.nn; ++m) out_.push_back(&(*in.payload.sparse_to)[m * s.ln + q]);
  senders_.entry.resize(s.ln * s.nn);
  for (std::size_t p = 0; p < s.ln; ++p)
    for (std::size_t m = 0; m < s.nn; ++m) senders_.entry[p * s.nn + m] = senders_.local[p];
  const std::uint32_t* received = in_node_.exchange(*s.levels.local, out_, s.nn, in.bucket,
                                                    in.plan, &senders_.entry, kind, stream);
  // What arrived is sender-major; each range's ln messages are put side by side, in local rank
  // order, and checked against that range.
  const std::vector<std::size_t>& words = in_node_.counts().words();
  const std::vector<std::size_t> from_sender = in_node_.counts().per_sender(s.nn);
  ByRange& b = by_range_;
  std::uint32_t* by_range =
      b.words.reserve_discard(std::max<std::size_t>(in_node_.counts().total(), 1), stream);
  b.lengths.resize(s.nn);
  b.offset.assign(s.nn, 0);
  std::size_t at = 0;
  for (std::size_t m = 0; m < s.nn; ++m) {
    b.offset[m] = at;
    b.lengths[m].resize(s.ln);
    std::size_t from = 0;
    for (std::size_t p = 0; p < s.ln; ++p) {
      std::size_t src = from;
      for (std::size_t mm = 0; mm < m; ++mm) src += words[p * s.nn + mm];
      const std::size_t length = words[p * s.nn + m];
      kernels::copy_bytes(by_range + at, received + src, length * sizeof(std::uint32_t), stream);
      b.lengths[m][p] = length;
      at += length;
      from += from_sender[p];
    }
  }
}

void TwoLevelSplit::merge_in_node(const Shape& s, const SparseInput& in) {
  compressors::SparseReselector& reselector = needs_reselector(in);
  const kernels::Stream& stream = in.stream;
  ByRange& b = by_range_;
  // The sums: the nn ranges merged here, then the range this rank owns, back to back.
  std::size_t sums_numel = 0;
  for (std::size_t m = 0; m < s.nn; ++m)
    sums_numel += range_numel(in.bucket, in.plan, s.n, m * s.ln + s.me);
  sums_numel += range_numel(in.bucket, in.plan, s.n, s.node * s.ln + s.me);
  float* sums = merge_.zeroed_sums(sums_numel, stream);
  b.views.resize(s.nn);
  b.segments.resize(s.nn);
  std::size_t sums_at = 0;
  for (std::size_t m = 0; m < s.nn; ++m) {
    lay_out_range(in.bucket, in.plan, s.n, m * s.ln + s.me, sums + sums_at, b.views[m]);
    sums_at += b.views[m].numel;
    compressors::validate_sparse_messages(b.views[m], in.plan, b.words.data() + b.offset[m],
                                          b.lengths[m], b.segments[m], stream, senders_.local);
  }
  lay_out_range(in.bucket, in.plan, s.n, s.node * s.ln + s.me, sums + sums_at, mine_);

  // Step 2: the node's sum of each range, cut to one share of k (node_merge_k): the rest goes
  // into this rank's residual.
  cut_plan(in.plan, s.n, compressors::node_merge_k, node_plan_);
  merged_.resize(s.nn);
  for (std::size_t m = 0; m < s.nn; ++m) {
    merged_[m].clear();
    merged_[m].reserve(compressors::max_message_words(node_plan_), stream);
    merge_.merge(reselector, in.bucket, in.plan, node_plan_, s.n, m * s.ln + s.me,
                 b.views[m], b.words.data() + b.offset[m], b.segments[m], merged_[m], stream);
  }
}

void TwoLevelSplit::to_owners(const Shape& s, const SparseInput& in, TrafficKind kind) {
  compressors::SparseReselector& reselector = needs_reselector(in);
  const kernels::Stream& stream = in.stream;
  // Step 3: node m's rank `me` gets this node's merged pairs of range m * ln + me (sizes first).
  out_.clear();
  for (const compressors::SparseMessageWriter& w : merged_) out_.push_back(&w);
  const std::uint32_t* merged = across_.exchange(*s.levels.cross, out_, 1, in.bucket,
                                                 node_plan_, &senders_.cross, kind, stream);
  compressors::validate_sparse_messages(mine_, node_plan_, merged, across_.counts().words(),
                                        segments_, stream, senders_.cross);
  // Step 4: the owner keeps the largest of the nodes' sums (split_k, as the flat split).
  kept_.prepare(in.plan, s.n, compressors::split_k, stream);
  merge_.merge(reselector, in.bucket, node_plan_, kept_.plan, s.n, s.node * s.ln + s.me,
               mine_, merged, segments_, kept_.message, stream);
  merge_.all_merged();  // every merge left its sums zero
}

void TwoLevelSplit::share_kept(const Shape& s, const SparseInput& in, TrafficKind kind) {
  const kernels::Stream& stream = in.stream;
  // Step 5: the kept pairs across (rank `me` of every node), then inside the node, so that every
  // rank holds every range's; each is checked against its range, naming the rank that kept it.
  const auto length = static_cast<std::int64_t>(kept_.message.size());
  cross_counts_.gather(*s.levels.cross, &length, 1, in.bucket, kept_.plan, &senders_.cross);
  const std::size_t total = cross_counts_.total();
  std::uint32_t* node_kept =
      node_kept_words_.reserve_discard(std::max<std::size_t>(total, 1), stream);
  stream.synchronize();
  s.levels.cross->allgatherv(kept_.message.data(), kept_.message.size(), node_kept,
                             cross_counts_.words(), DataType::kInt32, kind);
  cross_lengths_.resize(s.nn);
  for (std::size_t m = 0; m < s.nn; ++m)
    cross_lengths_[m] = static_cast<std::int64_t>(cross_counts_.words()[m]);
  // Entry q * nn + m is range m * ln + q's, kept by that range's owner.
  for (std::size_t q = 0; q < s.ln; ++q)
    for (std::size_t m = 0; m < s.nn; ++m)
      senders_.entry[q * s.nn + m] = s.levels.world_rank[m * s.ln + q];
  local_counts_.gather(*s.levels.local, cross_lengths_.data(), s.nn, in.bucket, kept_.plan,
                       &senders_.entry);
  all_kept_.reserve(s.n, local_counts_.total(), stream);
  std::size_t incoming = 0;
  for (std::size_t q = 0; q < s.ln; ++q) {
    for (std::size_t m = 0; m < s.nn; ++m) {
      const std::size_t words = local_counts_.words()[q * s.nn + m];
      all_kept_.set_range(m * s.ln + q, incoming, words);
      incoming += words;
    }
  }
  s.levels.local->allgatherv(node_kept, total, all_kept_.data(), local_counts_.per_sender(s.nn),
                             DataType::kInt32, kind);
  all_kept_.validate(in.bucket, kept_.plan, &s.levels.world_rank, stream);
}

void TwoLevelSplit::decode(const compressors::BucketView& /*bucket*/,
                           const compressors::ExchangePlan& /*plan*/,
                           const kernels::Stream& stream) {
  all_kept_.accumulate(kept_.plan, stream);
}

}  // namespace gw::exchange
