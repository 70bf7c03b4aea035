#include "plugin/exchange/dense_rounds.h"

#include <stdexcept>
#include <string>

namespace gw::exchange {

float* DenseRounds::project(compressors::LowRankRound* low_rank,
                            const compressors::BucketView& bucket,
                            const compressors::ExchangePlan& plan,
                            const compressors::EncodedBucket& payload,
                            const kernels::Stream& stream) {
  if (low_rank == nullptr) {
    throw std::logic_error("bucket " + std::to_string(bucket.index) +
                           ": the plan has low-rank tensors, but the compressor has no low-rank "
                           "round (Note [Compressor capabilities])");
  }
  float* q = q_.reserve_discard(plan.q_count(), stream);
  low_rank->project(bucket, plan, payload.factors, q);
  return q;
}

const float* DenseRounds::exchange(Communicator& comm, compressors::LowRankRound* low_rank,
                                   const compressors::BucketView& bucket,
                                   const compressors::ExchangePlan& plan,
                                   const compressors::EncodedBucket& payload, TrafficKind kind,
                                   const kernels::Stream& stream, bool ordered) {
  // Ordered on the stream (Note [Collectives ordered on a stream]): the collectives say so and
  // the stream is not waited for; otherwise the caller has synchronised it.
  auto sum = [&](void* buffer, std::size_t count, DataType type) {
    Collective c = Collective::allreduce(buffer, count, type, ReduceOp::kSum, kind);
    if (ordered) c.ready_on = &stream;
    comm.run(c);
  };
  const std::size_t count = payload.dense_count + plan.p_count();
  if (count > 0) {
    const bool half = plan.dense_wire == compressors::DenseWire::kFloat16;
    sum(half ? static_cast<void*>(payload.f16) : static_cast<void*>(payload.f32), count,
        half ? DataType::kFloat16 : DataType::kFloat32);
  }
  if (plan.low_rank.empty()) return nullptr;
  // The second round (Note [PowerSGD]): this rank's Q of every low-rank tensor, summed.
  float* q = project(low_rank, bucket, plan, payload, stream);
  if (!ordered) stream.synchronize();
  sum(q, plan.q_count(), DataType::kFloat32);
  return q;
}

void DenseRounds::local_only(compressors::LowRankRound* low_rank,
                             const compressors::BucketView& bucket,
                             const compressors::ExchangePlan& plan,
                             const compressors::EncodedBucket& payload,
                             const kernels::Stream& stream) {
  if (plan.low_rank.empty()) return;
  const float* q = project(low_rank, bucket, plan, payload, stream);
  low_rank->reconstruct(bucket, plan, payload.factors, q);
}

}  // namespace gw::exchange
