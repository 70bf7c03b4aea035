#include "plugin/bucket_exchange.h"

namespace gw {

using compressors::DenseWire;

const compressors::ExchangePlan& BucketExchange::run(Communicator& comm,
                                                     compressors::Compressor& compressor,
                                                     const compressors::BucketView& bucket,
                                                     TrafficKind kind, ExchangeTimes* times) {
  const int n = comm.size();
  const kernels::Stream& stream = compressor.stream();
  compressor.plan_into(bucket, n, plan_);
  const compressors::ExchangePlan& plan = plan_;

  compressors::EncodedBucket payload;
  for (std::size_t pos : plan.dense) payload.dense_count += bucket.tensors[pos].numel;
  if (plan.dense_wire == DenseWire::kFloat16) {
    payload.f16 = dense_f16_.reserve_discard(payload.dense_count, stream);
  } else if (plan.all_dense()) {
    payload.f32 = bucket.data;  // in place
  } else {
    payload.f32 = dense_f32_.reserve_discard(payload.dense_count, stream);
  }
  sparse_.clear();
  sparse_.reserve(compressors::max_message_words(plan), stream);
  payload.sparse = &sparse_;

  compressor.encode(bucket, plan, n, payload);
  if (times) times->encoded.record(stream);
  stream.synchronize();

  if (payload.dense_count > 0) {
    const bool half = plan.dense_wire == DenseWire::kFloat16;
    comm.allreduce(half ? static_cast<void*>(payload.f16) : static_cast<void*>(payload.f32),
                   payload.dense_count, half ? DataType::kFloat16 : DataType::kFloat32,
                   ReduceOp::kSum, kind);
  }
  if (!plan.sparse.empty()) {
    // Each rank's message length first (it sends at most k pairs per tensor, often fewer).
    const auto un = static_cast<std::size_t>(n);
    const auto mine = static_cast<std::int64_t>(sparse_.size());
    sizes_.resize(un);
    ones_.assign(un, 1);
    comm.allgatherv(&mine, 1, sizes_.data(), ones_, DataType::kInt64, TrafficKind::kControl);
    compressors::check_message_sizes(bucket, plan, sizes_, words_per_rank_);
    std::size_t total = 0;
    for (std::size_t words : words_per_rank_) total += words;
    std::uint32_t* received = received_.reserve_discard(total, stream);
    comm.allgatherv(sparse_.data(), sparse_.size(), received, words_per_rank_, DataType::kInt32,
                    kind);
    compressors::validate_sparse_messages(bucket, plan, received, words_per_rank_, segments_,
                                          stream);
  }
  if (times) times->exchanged.record(stream);
  compressors::decode_dense(bucket, plan, payload, stream);
  if (!plan.sparse.empty()) {
    compressors::accumulate_sparse_messages(bucket, plan, received_.data(), segments_, stream);
  }
  if (times) times->decoded.record(stream);
  stream.synchronize();
  return plan;
}

}  // namespace gw
