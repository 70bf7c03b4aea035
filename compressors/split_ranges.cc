#include "compressors/split_ranges.h"

#include <algorithm>

#include "compressors/sparse_inbox.h"
#include "kernels/sparse.h"

namespace gw::compressors {

std::size_t range_numel(const BucketView& bucket,
                        const ExchangePlan& plan, std::size_t ranges, std::size_t r) {
  std::size_t numel = 0;
  for (std::size_t pos : plan.sparse)
    numel += split_range(bucket.tensors[pos].numel, ranges, r).len;
  return numel;
}

void lay_out_range(const BucketView& bucket, const ExchangePlan& plan,
                   std::size_t ranges, std::size_t r, float* data, BucketView& view) {
  view = bucket;
  std::size_t numel = 0;
  for (std::size_t pos : plan.sparse) {
    const SplitRange range =
        split_range(bucket.tensors[pos].numel, ranges, r);
    view.tensors[pos].offset = numel;
    view.tensors[pos].numel = range.len;
    numel += range.len;
  }
  view.data = data;
  view.numel = numel;
}

void range_of_bucket(const BucketView& bucket, const ExchangePlan& plan,
                     std::size_t ranges, std::size_t r, BucketView& view) {
  view = bucket;
  for (std::size_t pos : plan.sparse) {
    const SplitRange range =
        split_range(bucket.tensors[pos].numel, ranges, r);
    view.tensors[pos].offset += range.begin;
    view.tensors[pos].numel = range.len;
  }
}

void cut_plan(const ExchangePlan& from, std::size_t ranges,
              std::size_t (*kept)(std::size_t, std::size_t), ExchangePlan& out) {
  out = from;
  for (std::size_t t = 0; t < out.k.size(); ++t) out.k[t] = kept(from.k[t], ranges);
}

void KeptPairs::prepare(const ExchangePlan& from, std::size_t ranges,
                        std::size_t (*kept)(std::size_t, std::size_t),
                        const kernels::Stream& stream) {
  cut_plan(from, ranges, kept, plan);
  message.clear();
  message.reserve(max_message_words(plan), stream);
}

namespace {

// Appends to `out` the largest budget.k of each sparse tensor's range r (of `ranges`), held in
// `sums` (laid out by lay_out_range); the rest goes into the compressor's residual.
void reselect_range(SparseReselector& reselector, const BucketView& bucket,
                    const ExchangePlan& plan, const ExchangePlan& budget, std::size_t ranges,
                    std::size_t r, const BucketView& sums, SparseMessageWriter& out) {
  for (std::size_t t = 0; t < plan.sparse.size(); ++t) {
    const TensorSlot& slot = bucket.tensors[plan.sparse[t]];
    const TensorSlot& part = sums.tensors[plan.sparse[t]];
    reselector.reselect(slot, sums.data + part.offset, split_range(slot.numel, ranges, r).begin,
                        part.numel, budget.k[t], plan.sparse_wire, out);
  }
}

}  // namespace

const KeptPairs& RangeKeeper::keep(SparseReselector& reselector, SparseInbox& received,
                                   const BucketView& bucket, const ExchangePlan& plan,
                                   std::size_t ranges, std::size_t r,
                                   const kernels::Stream& stream) {
  // This rank's ranges, laid out one after another in sums_: what the messages are checked
  // against and summed into.
  float* sums =
      sums_.reserve_discard(std::max<std::size_t>(range_numel(bucket, plan, ranges, r), 1), stream);
  lay_out_range(bucket, plan, ranges, r, sums, mine_);
  received.check(mine_, stream);
  received.write(stream);
  // The largest of the sums; the rest goes back into this rank's residual.
  kept_.prepare(plan, ranges, split_k, stream);
  reselect_range(reselector, bucket, plan, kept_.plan, ranges, r, mine_, kept_.message);
  return kept_;
}

float* RangeMerge::zeroed_sums(std::size_t numel, const kernels::Stream& stream) {
  float* sums = sums_.reserve_discard(std::max<std::size_t>(numel, 1), stream);
  if (!zeroed_ || numel > zeroed_numel_) {
    kernels::fill_zero(sums, std::max(numel, zeroed_numel_) * sizeof(float), stream);
    zeroed_numel_ = std::max(numel, zeroed_numel_);
  }
  zeroed_ = false;  // until the merges have left them zero again
  return sums;
}

void RangeMerge::merge(SparseReselector& reselector, const BucketView& bucket,
                       const ExchangePlan& plan, const ExchangePlan& budget, std::size_t ranges,
                       std::size_t r, const BucketView& sums, const SparseInbox& received,
                       SparseMessageWriter& out, const kernels::Stream& stream) {
  const SparseSegments& segments = received.segments();
  const std::size_t tensors = plan.sparse.size();
  const std::size_t senders = tensors == 0 ? 0 : segments.count.size() / tensors;
  const std::uint32_t* pairs = received.pairs();
  for (std::size_t t = 0; t < tensors; ++t) {
    const TensorSlot& slot = bucket.tensors[plan.sparse[t]];
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
    reselector.reselect_among(slot, part, split_range(slot.numel, ranges, r).begin, candidates,
                              distinct, budget.k[t], plan.sparse_wire, out);
  }
}

void pack_messages(const std::vector<const SparseMessageWriter*>& messages,
                   kernels::Buffer<std::uint32_t>& packed, std::vector<std::size_t>& words,
                   const kernels::Stream& stream) {
  std::size_t total = 0;
  words.resize(messages.size());
  for (std::size_t e = 0; e < messages.size(); ++e) {
    words[e] = messages[e]->size();
    total += words[e];
  }
  // Never null, even with nothing to send: a routed communicator picks its backend from the
  // buffers, and every rank must pick the same (Note [Host buffers beside NCCL]).
  std::uint32_t* out = packed.reserve_discard(std::max<std::size_t>(total, 1), stream);
  std::size_t at = 0;
  for (std::size_t e = 0; e < messages.size(); ++e) {
    kernels::copy_bytes(out + at, messages[e]->data(), words[e] * sizeof(std::uint32_t), stream);
    at += words[e];
  }
}

}  // namespace gw::compressors
