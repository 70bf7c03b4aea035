// The compressors' side of the split sparse allreduce (Note [Sparse allreduce by split],
// exchange_plan.h) and of its two-level form (Note [Sparse allreduce over two levels],
// plugin/exchange/two_level_split.h): views of one index range of every sparse tensor, the plan of
// what a range's owner or a node's merger keeps, and the work on what arrives for a range: its
// sum, and the largest of it kept while the rest goes back into the compressor's residual.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "compressors/bucket_view.h"
#include "compressors/capabilities.h"
#include "compressors/exchange_plan.h"
#include "compressors/sparse_message.h"
#include "kernels/stream.h"

namespace gw::compressors {

class SparseInbox;

// Elements of range r (of `ranges`) over the plan's sparse tensors.
std::size_t range_numel(const BucketView& bucket, const ExchangePlan& plan, std::size_t ranges,
                        std::size_t r);
// Range r of each sparse tensor, back to back from `data` (range_numel floats): `view` is the
// bucket with those tensors' slots moved there.
void lay_out_range(const BucketView& bucket, const ExchangePlan& plan, std::size_t ranges,
                   std::size_t r, float* data, BucketView& view);
// `view` is the bucket with each sparse tensor cut down to its range r, in place.
void range_of_bucket(const BucketView& bucket, const ExchangePlan& plan, std::size_t ranges,
                     std::size_t r, BucketView& view);

// `out` is `from` with each sparse tensor's k cut to kept(k, ranges) (split_k, node_merge_k): what
// a range's owner or merger may keep of it.
void cut_plan(const ExchangePlan& from, std::size_t ranges,
              std::size_t (*kept)(std::size_t k, std::size_t ranges), ExchangePlan& out);

// The plan of what a range's owner keeps (cut_plan), and the message of those pairs.
struct KeptPairs {
  ExchangePlan plan;
  SparseMessageWriter message;
  void prepare(const ExchangePlan& from, std::size_t ranges,
               std::size_t (*kept)(std::size_t k, std::size_t ranges),
               const kernels::Stream& stream);
};

// What the owner of range r does with the pairs every rank sent it (the flat split's step 2):
// sums them over its range (checking each message first), keeps the largest split_k of each
// tensor, and hands the rest to the compressor's residual.
class RangeKeeper {
 public:
  const KeptPairs& keep(SparseReselector& reselector, SparseInbox& received,
                        const BucketView& bucket, const ExchangePlan& plan, std::size_t ranges,
                        std::size_t r, const kernels::Stream& stream);

 private:
  kernels::Buffer<float> sums_;
  BucketView mine_;
  KeptPairs kept_;
};

// The same over two levels, on the pairs alone (Note [Sparse allreduce over two levels]): adds the
// checked messages of range r into sums kept zero between merges, and keeps the largest budget.k
// of each tensor among the indices they name (SparseReselector::reselect_among), O(pairs).
class RangeMerge {
 public:
  // Sums of `numel` floats, zero (zeroed only where a merge may not have left them so).
  float* zeroed_sums(std::size_t numel, const kernels::Stream& stream);
  // Every merge since zeroed_sums() has left its sums zero again.
  void all_merged() { zeroed_ = true; }
  // `received` was checked against `sums` (a range laid out by lay_out_range over those sums);
  // appends what it keeps to `out`.
  void merge(SparseReselector& reselector, const BucketView& bucket, const ExchangePlan& plan,
             const ExchangePlan& budget, std::size_t ranges, std::size_t r, const BucketView& sums,
             const SparseInbox& received, SparseMessageWriter& out, const kernels::Stream& stream);

 private:
  kernels::Buffer<float> sums_;  // zero between merges
  std::size_t zeroed_numel_ = 0;
  bool zeroed_ = false;
  kernels::Buffer<std::uint32_t> candidates_;
};

// Messages back to back in `packed` (room for all, stream memory), their lengths into `words`.
void pack_messages(const std::vector<const SparseMessageWriter*>& messages,
                   kernels::Buffer<std::uint32_t>& packed, std::vector<std::size_t>& words,
                   const kernels::Stream& stream);

}  // namespace gw::compressors
