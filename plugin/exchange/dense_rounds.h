// A bucket's dense part and its low-rank factors: one allreduce of the dense tensors with every
// P after them, then, for a plan with low-rank tensors, the Q round (Note [PowerSGD]).
#pragma once

#include "compressors/capabilities.h"
#include "compressors/compressor.h"
#include "kernels/stream.h"
#include "plugin/comm/communicator.h"

namespace gw::exchange {

class DenseRounds {
 public:
  // Sums the dense part (and P) over the ranks; then this rank's Q of each low-rank tensor, and
  // sums those. `low_rank` is the compressor's round, needed only when the plan has low-rank
  // tensors (an internal error otherwise). Returns the summed Qs (null without low-rank tensors).
  const float* exchange(Communicator& comm, compressors::LowRankRound* low_rank,
                        const compressors::BucketView& bucket,
                        const compressors::ExchangePlan& plan,
                        const compressors::EncodedBucket& payload, TrafficKind kind,
                        const kernels::Stream& stream, bool ordered = false);
  // The same local work with nothing sent (BucketExchange::trial): this rank's Q from its own P,
  // then P Q^T back into the bucket.
  void local_only(compressors::LowRankRound* low_rank, const compressors::BucketView& bucket,
                  const compressors::ExchangePlan& plan, const compressors::EncodedBucket& payload,
                  const kernels::Stream& stream);

 private:
  float* project(compressors::LowRankRound* low_rank, const compressors::BucketView& bucket,
                 const compressors::ExchangePlan& plan, const compressors::EncodedBucket& payload,
                 const kernels::Stream& stream);

  kernels::Buffer<float> q_;  // the low-rank round's Q factors
};

}  // namespace gw::exchange
