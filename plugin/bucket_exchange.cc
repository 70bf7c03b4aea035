#include "plugin/bucket_exchange.h"

namespace gw {

using compressors::DenseWire;

const compressors::ExchangePlan& BucketExchange::run(Communicator& comm,
                                                     compressors::Compressor& compressor,
                                                     const compressors::BucketView& bucket,
                                                     TrafficKind kind, ExchangeTimes* times) {
  const int n = comm.size();
  compressor.plan_into(bucket, n, plan_);
  const compressors::ExchangePlan& plan = plan_;

  compressors::EncodedBucket payload;
  for (std::size_t pos : plan.dense) payload.dense_count += bucket.tensors[pos].numel;
  if (plan.dense_wire == DenseWire::kFloat16) {
    if (dense_f16_.size() < payload.dense_count) dense_f16_.resize(payload.dense_count);
    payload.f16 = dense_f16_.data();
  } else if (plan.all_dense()) {
    payload.f32 = bucket.data;  // in place
  } else {
    if (dense_f32_.size() < payload.dense_count) dense_f32_.resize(payload.dense_count);
    payload.f32 = dense_f32_.data();
  }
  sparse_.clear();
  sparse_.reserve(compressors::max_message_words(plan));
  payload.sparse = &sparse_;

  compressor.encode(bucket, plan, n, payload);
  if (times) times->encoded = std::chrono::steady_clock::now();

  if (payload.dense_count > 0) {
    const bool half = plan.dense_wire == DenseWire::kFloat16;
    comm.allreduce(half ? static_cast<void*>(payload.f16) : static_cast<void*>(payload.f32),
                   payload.dense_count, half ? DataType::kFloat16 : DataType::kFloat32,
                   ReduceOp::kSum, kind);
  }
  if (!plan.sparse.empty()) {
    // Each rank's message length first (it sends at most k pairs per tensor, often fewer).
    const auto un = static_cast<std::size_t>(n);
    const auto mine = static_cast<std::int64_t>(sparse_.words().size());
    sizes_.resize(un);
    ones_.assign(un, 1);
    comm.allgatherv(&mine, 1, sizes_.data(), ones_, DataType::kInt64, TrafficKind::kControl);
    compressors::check_message_sizes(bucket, plan, sizes_, words_per_rank_);
    std::size_t total = 0;
    for (std::size_t words : words_per_rank_) total += words;
    if (received_.size() < total) received_.resize(total);
    comm.allgatherv(sparse_.words().data(), sparse_.words().size(), received_.data(),
                    words_per_rank_, DataType::kInt32, kind);
    compressors::validate_sparse_messages(bucket, plan, received_.data(), words_per_rank_,
                                          sent_indices_);
  }
  if (times) times->exchanged = std::chrono::steady_clock::now();
  compressors::decode_dense(bucket, plan, payload);
  if (!plan.sparse.empty()) {
    compressors::accumulate_sparse_messages(bucket, plan, received_.data(), words_per_rank_);
  }
  if (times) times->decoded = std::chrono::steady_clock::now();
  return plan;
}

}  // namespace gw
