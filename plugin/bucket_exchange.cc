#include "plugin/bucket_exchange.h"

#include <algorithm>

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
  // The low-rank tensors' P factors ride in the dense part's allreduce, after it.
  const std::size_t p_count = plan.p_count();
  if (plan.dense_wire == DenseWire::kFloat16) {
    payload.f16 = dense_f16_.reserve_discard(payload.dense_count, stream);
  } else if (plan.all_dense()) {
    payload.f32 = bucket.data;  // in place
  } else {
    payload.f32 = dense_f32_.reserve_discard(payload.dense_count + p_count, stream);
    payload.factors = payload.f32 + payload.dense_count;
  }
  const bool split = plan.sparse_algo == compressors::SparseAlgo::kSplit && !plan.sparse.empty();
  if (split) {
    to_.resize(static_cast<std::size_t>(n));
    for (compressors::SparseMessageWriter& w : to_) {
      w.clear();
      w.reserve(compressors::max_message_words(plan), stream);
    }
    payload.sparse_to = &to_;
  } else {
    sparse_.clear();
    sparse_.reserve(compressors::max_message_words(plan), stream);
    payload.sparse = &sparse_;
  }

  compressor.encode(bucket, plan, n, payload);
  if (times) times->encoded.record(stream);
  stream.synchronize();

  if (payload.dense_count + p_count > 0) {
    const bool half = plan.dense_wire == DenseWire::kFloat16;
    comm.allreduce(half ? static_cast<void*>(payload.f16) : static_cast<void*>(payload.f32),
                   payload.dense_count + p_count, half ? DataType::kFloat16 : DataType::kFloat32,
                   ReduceOp::kSum, kind);
  }
  float* q = nullptr;
  if (!plan.low_rank.empty()) {
    // The second round (Note [PowerSGD]): this rank's Q of every low-rank tensor, summed.
    q = factors_q_.reserve_discard(plan.q_count(), stream);
    compressor.project(bucket, plan, payload.factors, q);
    stream.synchronize();
    comm.allreduce(q, plan.q_count(), DataType::kFloat32, ReduceOp::kSum, kind);
  }
  if (split) {
    exchange_split(comm, compressor, bucket, plan, kind);
  } else if (!plan.sparse.empty()) {
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
  if (q) compressor.reconstruct(bucket, plan, payload.factors, q);
  if (split) {
    accumulate_split(stream);
  } else if (!plan.sparse.empty()) {
    compressors::accumulate_sparse_messages(bucket, plan, received_.data(), segments_, stream);
  }
  if (times) times->decoded.record(stream);
  stream.synchronize();
  return plan;
}

void BucketExchange::exchange_split(Communicator& comm, compressors::Compressor& compressor,
                                    const compressors::BucketView& bucket,
                                    const compressors::ExchangePlan& plan, TrafficKind kind) {
  using compressors::split_range;
  const kernels::Stream& stream = compressor.stream();
  const auto un = static_cast<std::size_t>(comm.size());
  const auto me = static_cast<std::size_t>(comm.rank());

  // Step 1: rank r gets this rank's pairs in its ranges; the sizes go first.
  send_sizes_.resize(un);
  send_words_.resize(un);
  std::size_t total = 0;
  for (std::size_t r = 0; r < un; ++r) {
    send_words_[r] = to_[r].size();
    send_sizes_[r] = static_cast<std::int64_t>(to_[r].size());
    total += to_[r].size();
  }
  sizes_.resize(un);
  ones_.assign(un, 1);
  comm.alltoallv(send_sizes_.data(), ones_, sizes_.data(), ones_, DataType::kInt64,
                 TrafficKind::kControl);
  compressors::check_message_sizes(bucket, plan, sizes_, words_per_rank_);
  // Never null, even with nothing to send: a routed communicator picks its backend from the
  // buffers, and every rank must pick the same (Note [Host buffers beside NCCL]).
  std::uint32_t* packed = packed_.reserve_discard(std::max<std::size_t>(total, 1), stream);
  std::size_t at = 0;
  for (std::size_t r = 0; r < un; ++r) {
    kernels::copy_bytes(packed + at, to_[r].data(), to_[r].size() * sizeof(std::uint32_t), stream);
    at += to_[r].size();
  }
  std::size_t incoming = 0;
  for (std::size_t words : words_per_rank_) incoming += words;
  std::uint32_t* received = received_.reserve_discard(std::max<std::size_t>(incoming, 1), stream);
  stream.synchronize();
  comm.alltoallv(packed, send_words_, received, words_per_rank_, DataType::kInt32, kind);

  // This rank's ranges, laid out one after another in sums_: what step 1's messages are checked
  // against and summed into.
  mine_ = bucket;
  std::size_t mine_numel = 0;
  for (std::size_t pos : plan.sparse) {
    const compressors::SplitRange range = split_range(bucket.tensors[pos].numel, un, me);
    mine_.tensors[pos].offset = mine_numel;
    mine_.tensors[pos].numel = range.len;
    mine_numel += range.len;
  }
  mine_.data = sums_.reserve_discard(mine_numel, stream);
  mine_.numel = mine_numel;
  compressors::validate_sparse_messages(mine_, plan, received, words_per_rank_, segments_, stream);
  compressors::accumulate_sparse_messages(mine_, plan, received, segments_, stream);

  // Step 2: keep the largest of the sums; the rest goes back into this rank's residual.
  kept_plan_ = plan;
  for (std::size_t j = 0; j < plan.k.size(); ++j)
    kept_plan_.k[j] = compressors::split_k(plan.k[j], un);
  kept_.clear();
  kept_.reserve(compressors::max_message_words(kept_plan_), stream);
  for (std::size_t j = 0; j < plan.sparse.size(); ++j) {
    const compressors::TensorSlot& t = bucket.tensors[plan.sparse[j]];
    const compressors::TensorSlot& m = mine_.tensors[plan.sparse[j]];
    compressor.reselect(t, mine_.data + m.offset, split_range(t.numel, un, me).begin, m.numel,
                        kept_plan_.k[j], plan.sparse_wire, kept_);
  }

  // Step 3: every rank's kept pairs to every rank, each checked against its sender's ranges.
  const auto mine = static_cast<std::int64_t>(kept_.size());
  comm.allgatherv(&mine, 1, sizes_.data(), ones_, DataType::kInt64, TrafficKind::kControl);
  compressors::check_message_sizes(bucket, kept_plan_, sizes_, kept_words_);
  total = 0;
  for (std::size_t words : kept_words_) total += words;
  std::uint32_t* all_kept = received_kept_.reserve_discard(total, stream);
  stream.synchronize();
  comm.allgatherv(kept_.data(), kept_.size(), all_kept, kept_words_, DataType::kInt32, kind);
  ranges_.resize(un, bucket);
  kept_segments_.resize(un);
  std::size_t offset = 0;
  for (std::size_t r = 0; r < un; ++r) {
    ranges_[r] = bucket;
    for (std::size_t pos : plan.sparse) {
      const compressors::SplitRange range = split_range(bucket.tensors[pos].numel, un, r);
      ranges_[r].tensors[pos].offset += range.begin;
      ranges_[r].tensors[pos].numel = range.len;
    }
    one_rank_words_.assign(1, kept_words_[r]);
    compressors::validate_sparse_messages(ranges_[r], kept_plan_, all_kept + offset,
                                          one_rank_words_, kept_segments_[r], stream,
                                          static_cast<int>(r));
    offset += kept_words_[r];
  }
}

void BucketExchange::accumulate_split(const kernels::Stream& stream) {
  // Rank r's pairs land in range r of each tensor; the ranges cover every tensor, so each element
  // is zeroed once and written by its range's owner alone.
  std::size_t offset = 0;
  for (std::size_t r = 0; r < ranges_.size(); ++r) {
    compressors::accumulate_sparse_messages(ranges_[r], kept_plan_, received_kept_.data() + offset,
                                            kept_segments_[r], stream);
    offset += kept_words_[r];
  }
}

}  // namespace gw
