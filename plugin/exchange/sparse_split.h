// The sparse part by split (Note [Sparse allreduce by split], compressors/exchange_plan.h): each
// rank sums and reselects one index range of every sparse tensor, then every rank receives every
// range's kept pairs.
#pragma once

#include "plugin/exchange/message_counts.h"
#include "plugin/exchange/sparse_exchange.h"
#include "plugin/exchange/split_ranges.h"

namespace gw::exchange {

class SparseSplit final : public SparseExchange {
 public:
  void exchange(Communicator& comm, const SparseInput& in, TrafficKind kind) override;
  void decode(const compressors::BucketView& bucket, const compressors::ExchangePlan& plan,
              const kernels::Stream& stream) override;

 private:
  // Step 1: rank r gets this rank's pairs in its ranges (counts first).
  MessageAlltoall to_owners_;
  std::vector<const compressors::SparseMessageWriter*> out_;
  // Step 2: this rank's ranges summed (laid out back to back in sums_) and the largest kept.
  kernels::Buffer<float> sums_;
  compressors::BucketView mine_;
  compressors::SparseSegments segments_;
  KeptPairs kept_;
  // Step 3: every rank's kept pairs, each checked against its sender's ranges.
  MessageCounts kept_counts_;
  RangeMessages all_kept_;
};

// Appends to `out` the largest budget.k of each sparse tensor's range r (of `ranges`), held in
// `sums` (laid out by lay_out_range); the rest goes into the compressor's residual.
void reselect_range(compressors::SparseReselector& reselector,
                    const compressors::BucketView& bucket, const compressors::ExchangePlan& plan,
                    const compressors::ExchangePlan& budget, std::size_t ranges, std::size_t r,
                    const compressors::BucketView& sums, compressors::SparseMessageWriter& out);

// The split's reselection, or an internal error naming the compressor that lacks one.
compressors::SparseReselector& needs_reselector(const SparseInput& in);

}  // namespace gw::exchange
