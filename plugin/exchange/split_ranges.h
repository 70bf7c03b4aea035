// The index ranges of the split sparse allreduce (Note [Sparse allreduce by split]), shared by its
// flat and two-level forms: views of one range of every sparse tensor, the plan of what a range's
// owner keeps, and the kept pairs of every range once they have arrived.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "compressors/bucket_view.h"
#include "compressors/exchange_plan.h"
#include "compressors/sparse_message.h"
#include "kernels/stream.h"

namespace gw::exchange {

// Elements of range r (of `ranges`) over the plan's sparse tensors.
std::size_t range_numel(const compressors::BucketView& bucket,
                        const compressors::ExchangePlan& plan, std::size_t ranges, std::size_t r);
// Range r of each sparse tensor, back to back from `data` (range_numel floats): `view` is the
// bucket with those tensors' slots moved there.
void lay_out_range(const compressors::BucketView& bucket, const compressors::ExchangePlan& plan,
                   std::size_t ranges, std::size_t r, float* data, compressors::BucketView& view);
// `view` is the bucket with each sparse tensor cut down to its range r, in place.
void range_of_bucket(const compressors::BucketView& bucket, const compressors::ExchangePlan& plan,
                     std::size_t ranges, std::size_t r, compressors::BucketView& view);

// `out` is `from` with each sparse tensor's k cut to kept(k, ranges) (split_k, node_merge_k): what
// a range's merger or owner may keep of it.
void cut_plan(const compressors::ExchangePlan& from, std::size_t ranges,
              std::size_t (*kept)(std::size_t k, std::size_t ranges),
              compressors::ExchangePlan& out);

// The plan of what a range's owner keeps of its sums (cut_plan), and the message of those pairs.
struct KeptPairs {
  compressors::ExchangePlan plan;
  compressors::SparseMessageWriter message;
  void prepare(const compressors::ExchangePlan& from, std::size_t ranges,
               std::size_t (*kept)(std::size_t k, std::size_t ranges),
               const kernels::Stream& stream);
};

// Every range's kept pairs (range r's, kept by its owner) as they arrived, in stream memory: the
// split's last step checks each against range r of every sparse tensor and writes it there.
class RangeMessages {
 public:
  // Room for `ranges` messages of `total` words in all; set_range() places each.
  std::uint32_t* reserve(std::size_t ranges, std::size_t total, const kernels::Stream& stream);
  std::uint32_t* data() { return words_.data(); }
  void set_range(std::size_t r, std::size_t offset, std::size_t words);
  // Checks range r's message against range r of each sparse tensor under `plan` (the kept plan);
  // a malformed one is a PayloadError naming keeper[r] (rank r where keeper is null).
  void validate(const compressors::BucketView& bucket, const compressors::ExchangePlan& plan,
                const std::vector<int>* keeper, const kernels::Stream& stream);
  // Writes every range's pairs into its range of each tensor (after validate()). The ranges
  // cover every tensor, so each element is zeroed once and written from its range's message.
  void accumulate(const compressors::ExchangePlan& plan, const kernels::Stream& stream);

 private:
  kernels::Buffer<std::uint32_t> words_;
  std::vector<std::size_t> offset_, words_per_range_, one_;
  std::vector<compressors::BucketView> views_;
  std::vector<compressors::SparseSegments> segments_;
};

}  // namespace gw::exchange
