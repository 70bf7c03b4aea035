// The algorithms that sum a bucket's sparse part over the ranks: by allgatherv
// (SparseAllgather), by split (SparseSplit, Note [Sparse allreduce by split]) and by split over two
// levels (TwoLevelSplit, Note [Sparse allreduce over two levels]). BucketExchange picks one per
// bucket and step from the plan and the communicator.
#pragma once

#include "compressors/bucket_view.h"
#include "compressors/capabilities.h"
#include "compressors/compressor.h"
#include "compressors/exchange_plan.h"
#include "kernels/stream.h"
#include "plugin/comm/communicator.h"

namespace gw::exchange {

// One bucket's sparse part after encode: this rank's message (payload.sparse), or its message to
// each rank under the split (payload.sparse_to), and the compressor's reselection, which the
// split needs (Note [Compressor capabilities]).
struct SparseInput {
  const compressors::BucketView& bucket;
  const compressors::ExchangePlan& plan;
  const compressors::EncodedBucket& payload;
  compressors::SparseReselector* reselector;  // null: the compressor has none
  const kernels::Stream& stream;
};

class SparseExchange {
 public:
  virtual ~SparseExchange() = default;
  // Sends and receives, checking every message before anything is added (a malformed one is a
  // PayloadError naming its sender, on every rank, before the bucket is touched).
  virtual void exchange(Communicator& comm, const SparseInput& in, TrafficKind kind) = 0;
  // Writes the sum over the ranks into the bucket's sparse tensors, on `stream`.
  virtual void decode(const compressors::BucketView& bucket, const compressors::ExchangePlan& plan,
                      const kernels::Stream& stream) = 0;
};

}  // namespace gw::exchange
