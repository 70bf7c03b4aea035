// The sparse part by split (Note [Sparse allreduce by split], compressors/exchange_plan.h): each
// rank sums and reselects one index range of every sparse tensor, then every rank receives every
// range's kept pairs.
#pragma once

#include "compressors/split_ranges.h"
#include "plugin/exchange/message_counts.h"
#include "plugin/exchange/sparse_exchange.h"

namespace gw::exchange {

class SparseSplit final : public SparseExchange {
 public:
  compressors::SparseInbox& exchange(Communicator& comm, const SparseInput& in,
                                     TrafficKind kind) override;

 private:
  // Step 1: rank r gets this rank's pairs in its ranges (counts first); step 2: their sum over
  // this rank's ranges, the largest kept (compressors::RangeKeeper).
  MessageCounts to_owner_counts_;
  compressors::SparseInbox mine_;
  compressors::RangeKeeper keeper_;
  // Step 3: every rank's kept pairs to every rank, each checked against its sender's ranges.
  MessageCounts kept_counts_;
  compressors::SparseInbox all_kept_;
};

}  // namespace gw::exchange
