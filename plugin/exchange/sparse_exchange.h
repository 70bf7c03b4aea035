// The algorithms that sum a bucket's sparse part over the ranks: by allgatherv
// (SparseAllgather), by split (SparseSplit, Note [Sparse allreduce by split]) and by split over two
// levels (TwoLevelSplit, Note [Sparse allreduce over two levels]). BucketExchange picks one per
// bucket and step from the plan and the communicator. They move the messages; the compressors'
// side (compressors/sparse_inbox.h, split_ranges.h) checks them and works on what they say.
#pragma once

#include "compressors/bucket_payload.h"
#include "compressors/capabilities.h"
#include "compressors/sparse_inbox.h"
#include "kernels/stream.h"
#include "plugin/comm/communicator.h"

namespace gw::exchange {

// One bucket after encode, and the compressor's reselection, which the split needs
// (Note [Compressor capabilities]).
struct SparseInput {
  const compressors::BucketView& bucket;
  const compressors::BucketPayload& payload;
  compressors::SparseReselector* reselector;  // null: the compressor has none
  const kernels::Stream& stream;
};

class SparseExchange {
 public:
  virtual ~SparseExchange() = default;
  // How this algorithm wants the split's per-rank messages packed for its first send.
  virtual compressors::SplitPacking packing(Communicator& comm) const {
    return {static_cast<std::size_t>(comm.size()), 1};
  }
  // Sends and receives; returns what the bucket's decode writes, every message of it checked
  // there before anything is added (compressors::BucketPayload::decode).
  virtual compressors::SparseInbox& exchange(Communicator& comm, const SparseInput& in,
                                             TrafficKind kind) = 0;
};

// The split's reselection, or an internal error naming the bucket whose compressor lacks one.
compressors::SparseReselector& needs_reselector(const SparseInput& in);

}  // namespace gw::exchange
