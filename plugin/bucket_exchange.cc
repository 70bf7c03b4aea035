#include "plugin/bucket_exchange.h"

namespace gw {

using compressors::DenseWire;

BucketExchangeResult BucketExchange::run(Communicator& comm, compressors::Compressor& compressor,
                                         const compressors::BucketView& bucket) {
  const int n = comm.size();
  BucketExchangeResult result;
  result.plan = compressor.plan(bucket, n);
  const compressors::ExchangePlan& plan = result.plan;

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

  if (payload.dense_count > 0) {
    const bool half = plan.dense_wire == DenseWire::kFloat16;
    comm.allreduce(half ? static_cast<void*>(payload.f16) : static_cast<void*>(payload.f32),
                   payload.dense_count, half ? DataType::kFloat16 : DataType::kFloat32,
                   ReduceOp::kSum, TrafficKind::kGradient);
  }
  if (!plan.sparse.empty()) {
    // Each rank's message length first (it sends at most k pairs per tensor, often fewer).
    const std::size_t mine = sparse_.words().size();
    const auto un = static_cast<std::size_t>(n);
    sizes_.assign(un, 0);
    const auto mine64 = static_cast<std::int64_t>(mine);
    comm.allgatherv(&mine64, 1, sizes_.data(), std::vector<std::size_t>(un, 1), DataType::kInt64,
                    TrafficKind::kControl);
    words_per_rank_.resize(un);
    std::size_t total = 0;
    const std::size_t most = compressors::max_message_words(plan);
    for (std::size_t r = 0; r < un; ++r) {
      if (sizes_[r] < 0 || static_cast<std::size_t>(sizes_[r]) > most) {
        throw compressors::PayloadError(
            "sparse gradient message from rank " + std::to_string(r) + " (bucket " +
            std::to_string(bucket.index) + ") announces " + std::to_string(sizes_[r]) +
            " words; this step's plan allows at most " + std::to_string(most));
      }
      words_per_rank_[r] = static_cast<std::size_t>(sizes_[r]);
      total += words_per_rank_[r];
    }
    if (received_.size() < total) received_.resize(total);
    comm.allgatherv(sparse_.words().data(), mine, received_.data(), words_per_rank_,
                    DataType::kInt32, TrafficKind::kGradient);
    compressors::validate_sparse_messages(bucket, plan, received_.data(), words_per_rank_);
    result.sparse_words_sent = mine;
  }
  compressors::decode_dense(bucket, plan, payload);
  if (!plan.sparse.empty()) {
    compressors::accumulate_sparse_messages(bucket, plan, received_.data(), words_per_rank_);
  }
  return result;
}

}  // namespace gw
