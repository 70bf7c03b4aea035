// What the exchange's algorithms need of some compressors beyond encode.
// See Note [Compressor capabilities].
#pragma once

#include <cstddef>
#include <cstdint>

#include "compressors/bucket_view.h"
#include "compressors/exchange_plan.h"
#include "compressors/sparse_message.h"

namespace gw::compressors {

// Note [Compressor capabilities]
// Every compressor plans, encodes and keeps state (Compressor). Two exchange algorithms need one
// more thing of the compressor they run: the split sparse allreduce keeps the largest of summed
// ranges and hands the rest back to the compressor's residual (SparseReselector), and the
// low-rank round turns the summed P factors into this rank's Q and P Q^T back into the bucket
// (LowRankRound). Each is a small interface of its own, which a compressor implements beside
// Compressor and hands out through Compressor::reselector() or Compressor::low_rank() (null
// where it has none). The algorithm that needs one receives it; a plan that needs one from a
// compressor without it is an internal error (plugin/exchange/bucket_exchange.cc).

// Keeps the largest of a range's sums (Note [Sparse allreduce by split]).
class SparseReselector {
 public:
  virtual ~SparseReselector() = default;
  // `sums` holds this rank's index range [begin, begin + len) of tensor t summed over every rank's
  // pairs (stream memory, len floats, overwritten). Appends the largest k of it to `out` on
  // `wire`, indices relative to begin, and adds everything it does not send, and what the wire
  // drops of what it sends, into its own residual at [begin, begin + len): nothing is lost.
  // Returns how many it sent.
  virtual std::size_t reselect(const TensorSlot& t, float* sums, std::size_t begin,
                               std::size_t len, std::size_t k, SparseWire wire,
                               SparseMessageWriter& out) = 0;
  // The same where the sums are sparse: `sums` (from `begin`, stream memory) holds values only at
  // the `count` ascending, distinct `candidates` and is zero elsewhere. Keeps the largest k of
  // them (ties to the lower index), adds the rest and the wire's error into the residual at those
  // indices, and leaves `sums` zero at every candidate. The work is O(count), not O(len): the
  // merge of a node's pairs (Note [Sparse allreduce over two levels]).
  virtual std::size_t reselect_among(const TensorSlot& t, float* sums, std::size_t begin,
                                     const std::uint32_t* candidates, std::size_t count,
                                     std::size_t k, SparseWire wire, SparseMessageWriter& out) = 0;
};

// The second round of a plan with low-rank tensors (Note [PowerSGD]).
class LowRankRound {
 public:
  virtual ~LowRankRound() = default;
  // `p` holds every P summed over the ranks (plan.p_count() floats, made orthonormal in place);
  // writes this rank's Q of each tensor into `q` (plan.q_count() floats) and keeps in its
  // residual what P Q^T leaves out.
  virtual void project(const BucketView& bucket, const ExchangePlan& plan, float* p,
                       float* q) = 0;
  // `q` holds the Qs summed over the ranks; writes P Q^T, the sum over the ranks of each rank's
  // approximation, into the tensor.
  virtual void reconstruct(const BucketView& bucket, const ExchangePlan& plan, const float* p,
                           const float* q) = 0;
};

}  // namespace gw::compressors
