#include "plugin/bucket_exchange.h"

#include <algorithm>
#include <chrono>

#include "kernels/sparse.h"

namespace gw {

using compressors::DenseWire;

compressors::EncodedBucket BucketExchange::lay_out_payload(const compressors::BucketView& bucket,
                                                           const compressors::ExchangePlan& plan,
                                                           int world_size,
                                                           const kernels::Stream& stream) {
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
  if (plan.sparse_algo == compressors::SparseAlgo::kSplit && !plan.sparse.empty()) {
    to_.resize(static_cast<std::size_t>(world_size));
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
  return payload;
}

const compressors::ExchangePlan& BucketExchange::run(Communicator& comm,
                                                     compressors::Compressor& compressor,
                                                     const compressors::BucketView& bucket,
                                                     TrafficKind kind, ExchangeTimes* times) {
  const int n = comm.size();
  const kernels::Stream& stream = compressor.stream();
  compressor.plan_into(bucket, n, plan_);
  const compressors::ExchangePlan& plan = plan_;

  const compressors::EncodedBucket payload = lay_out_payload(bucket, plan, n, stream);
  const std::size_t p_count = plan.p_count();
  const bool split = payload.sparse_to != nullptr;

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
  const Levels* levels = split ? comm.levels() : nullptr;
  if (levels != nullptr && levels->local->size() > 1 && levels->cross->size() > 1) {
    exchange_split_levels(*levels, compressor, bucket, plan, kind);
  } else if (split) {
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

ExchangeTrial BucketExchange::trial(compressors::Compressor& compressor,
                                    const compressors::BucketView& bucket, int world_size) {
  const kernels::Stream& stream = compressor.stream();
  const auto begin = std::chrono::steady_clock::now();
  compressor.plan_into(bucket, world_size, plan_);
  const compressors::ExchangePlan& plan = plan_;
  ExchangeTrial t;
  const compressors::EncodedBucket payload = lay_out_payload(bucket, plan, world_size, stream);
  const std::size_t p_count = plan.p_count();
  if (plan.dense_wire == DenseWire::kFloat16) t.dense_element_size = sizeof(Half);
  t.sparse = !plan.sparse.empty();
  t.split = payload.sparse_to != nullptr;
  compressor.encode(bucket, plan, world_size, payload);
  if (!plan.low_rank.empty()) {
    float* q = factors_q_.reserve_discard(plan.q_count(), stream);
    compressor.project(bucket, plan, payload.factors, q);
    compressor.reconstruct(bucket, plan, payload.factors, q);
  }
  compressors::decode_dense(bucket, plan, payload, stream);
  stream.synchronize();
  t.codec_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  t.dense_elements = payload.dense_count + p_count;
  t.q_elements = plan.q_count();
  if (t.split) {
    for (const compressors::SparseMessageWriter& w : to_) t.sparse_words += w.size();
  } else if (t.sparse) {
    t.sparse_words = sparse_.size();
  }
  return t;
}

void BucketExchange::exchange_split(Communicator& comm, compressors::Compressor& compressor,
                                    const compressors::BucketView& bucket,
                                    const compressors::ExchangePlan& plan, TrafficKind kind) {
  const kernels::Stream& stream = compressor.stream();
  const auto un = static_cast<std::size_t>(comm.size());
  const auto me = static_cast<std::size_t>(comm.rank());

  // Step 1: rank r gets this rank's pairs in its ranges; the sizes go first.
  const std::uint32_t* received =
      alltoall_messages(comm, to_, bucket, plan, nullptr, kind, stream, words_per_rank_);

  // This rank's ranges, laid out one after another in sums_: what step 1's messages are checked
  // against and summed into.
  float* sums =
      sums_.reserve_discard(std::max<std::size_t>(range_numel(bucket, plan, un, me), 1), stream);
  lay_out_range(bucket, plan, un, me, sums, mine_);
  compressors::validate_sparse_messages(mine_, plan, received, words_per_rank_, segments_, stream);
  compressors::accumulate_sparse_messages(mine_, plan, received, segments_, stream);

  // Step 2: keep the largest of the sums; the rest goes back into this rank's residual.
  prepare_kept(plan, un, stream);
  reselect_range(compressor, bucket, plan, kept_plan_, un, me, mine_, kept_);

  // Step 3: every rank's kept pairs to every rank, each checked against its sender's ranges.
  const auto mine = static_cast<std::int64_t>(kept_.size());
  comm.allgatherv(&mine, 1, sizes_.data(), ones_, DataType::kInt64, TrafficKind::kControl);
  compressors::check_message_sizes(bucket, kept_plan_, sizes_, kept_words_);
  std::size_t total = 0;
  for (std::size_t words : kept_words_) total += words;
  std::uint32_t* all_kept = received_kept_.reserve_discard(total, stream);
  stream.synchronize();
  comm.allgatherv(kept_.data(), kept_.size(), all_kept, kept_words_, DataType::kInt32, kind);
  kept_offset_.resize(un);
  std::size_t offset = 0;
  for (std::size_t r = 0; r < un; ++r) {
    kept_offset_[r] = offset;
    offset += kept_words_[r];
  }
  validate_kept(bucket, plan, un, nullptr, stream);
}

const std::uint32_t* BucketExchange::alltoall_messages(
    Communicator& comm, const std::vector<compressors::SparseMessageWriter>& out,
    const compressors::BucketView& bucket, const compressors::ExchangePlan& plan,
    const std::vector<int>* senders, TrafficKind kind, const kernels::Stream& stream,
    std::vector<std::size_t>& words) {
  const auto un = static_cast<std::size_t>(comm.size());
  send_sizes_.resize(un);
  send_words_.resize(un);
  std::size_t total = 0;
  for (std::size_t r = 0; r < un; ++r) {
    send_words_[r] = out[r].size();
    send_sizes_[r] = static_cast<std::int64_t>(out[r].size());
    total += out[r].size();
  }
  sizes_.resize(un);
  ones_.assign(un, 1);
  comm.alltoallv(send_sizes_.data(), ones_, sizes_.data(), ones_, DataType::kInt64,
                 TrafficKind::kControl);
  compressors::check_message_sizes(bucket, plan, sizes_, words, senders);
  // Never null, even with nothing to send: a routed communicator picks its backend from the
  // buffers, and every rank must pick the same (Note [Host buffers beside NCCL]).
  std::uint32_t* packed = packed_.reserve_discard(std::max<std::size_t>(total, 1), stream);
  std::size_t at = 0;
  for (std::size_t r = 0; r < un; ++r) {
    kernels::copy_bytes(packed + at, out[r].data(), out[r].size() * sizeof(std::uint32_t), stream);
    at += out[r].size();
  }
  std::size_t incoming = 0;
  for (std::size_t w : words) incoming += w;
  std::uint32_t* received = received_.reserve_discard(std::max<std::size_t>(incoming, 1), stream);
  stream.synchronize();
  comm.alltoallv(packed, send_words_, received, words, DataType::kInt32, kind);
  return received;
}

void BucketExchange::prepare_kept(const compressors::ExchangePlan& plan, std::size_t ranges,
                                  const kernels::Stream& stream) {
  kept_plan_ = plan;
  for (std::size_t t = 0; t < plan.k.size(); ++t)
    kept_plan_.k[t] = compressors::split_k(plan.k[t], ranges);
  kept_.clear();
  kept_.reserve(compressors::max_message_words(kept_plan_), stream);
}

float* BucketExchange::zeroed_sums(std::size_t numel, const kernels::Stream& stream) {
  float* sums = merge_sums_.reserve_discard(std::max<std::size_t>(numel, 1), stream);
  if (!sums_zeroed_ || numel > zeroed_numel_) {
    kernels::fill_zero(sums, std::max(numel, zeroed_numel_) * sizeof(float), stream);
    zeroed_numel_ = std::max(numel, zeroed_numel_);
  }
  sums_zeroed_ = false;  // until the merges have left them zero again
  return sums;
}

void BucketExchange::merge_range(compressors::Compressor& compressor,
                                 const compressors::BucketView& bucket,
                                 const compressors::ExchangePlan& plan,
                                 const compressors::ExchangePlan& budget, std::size_t ranges,
                                 std::size_t r, const compressors::BucketView& sums,
                                 const std::uint32_t* words,
                                 const compressors::SparseSegments& segments,
                                 compressors::SparseMessageWriter& out) {
  const kernels::Stream& stream = compressor.stream();
  const std::size_t tensors = plan.sparse.size();
  const std::size_t senders = tensors == 0 ? 0 : segments.count.size() / tensors;
  const std::uint32_t* pairs = segments.in_decoded ? segments.decoded.data() : words;
  for (std::size_t t = 0; t < tensors; ++t) {
    const compressors::TensorSlot& slot = bucket.tensors[plan.sparse[t]];
    float* part = sums.data + sums.tensors[plan.sparse[t]].offset;
    std::size_t total = 0;
    for (std::size_t s = 0; s < senders; ++s) total += segments.count[s * tensors + t];
    std::uint32_t* candidates =
        candidates_.reserve_discard(std::max<std::size_t>(total, 1), stream);
    std::size_t at = 0;
    for (std::size_t s = 0; s < senders; ++s) {
      const std::uint32_t* segment = pairs + segments.offset[s * tensors + t];
      const std::size_t count = segments.count[s * tensors + t];
      kernels::scatter_add_pairs(segment, count, part, stream);  // in sender order
      kernels::pair_indices(segment, count, candidates + at, stream);
      at += count;
    }
    const std::size_t distinct = kernels::sort_unique(candidates, at, stream);
    compressor.reselect_among(slot, part, compressors::split_range(slot.numel, ranges, r).begin,
                              candidates, distinct, budget.k[t], plan.sparse_wire, out);
  }
}

void BucketExchange::validate_kept(const compressors::BucketView& bucket,
                                   const compressors::ExchangePlan& plan, std::size_t ranges,
                                   const std::vector<int>* world_rank,
                                   const kernels::Stream& stream) {
  ranges_.resize(ranges, bucket);
  kept_segments_.resize(ranges);
  for (std::size_t r = 0; r < ranges; ++r) {
    ranges_[r] = bucket;
    for (std::size_t pos : plan.sparse) {
      const compressors::SplitRange range =
          compressors::split_range(bucket.tensors[pos].numel, ranges, r);
      ranges_[r].tensors[pos].offset += range.begin;
      ranges_[r].tensors[pos].numel = range.len;
    }
    one_rank_words_.assign(1, kept_words_[r]);
    compressors::validate_sparse_messages(
        ranges_[r], kept_plan_, received_kept_.data() + kept_offset_[r], one_rank_words_,
        kept_segments_[r], stream, world_rank != nullptr ? (*world_rank)[r] : static_cast<int>(r));
  }
}

void BucketExchange::accumulate_split(const kernels::Stream& stream) {
  // Range r's kept pairs land in range r of each tensor; the ranges cover every tensor, so each
  // element is zeroed once and written from its range's message alone.
  for (std::size_t r = 0; r < ranges_.size(); ++r) {
    compressors::accumulate_sparse_messages(
        ranges_[r], kept_plan_, received_kept_.data() + kept_offset_[r], kept_segments_[r], stream);
  }
}

std::size_t BucketExchange::range_numel(const compressors::BucketView& bucket,
                                        const compressors::ExchangePlan& plan, std::size_t ranges,
                                        std::size_t r) {
  std::size_t numel = 0;
  for (std::size_t pos : plan.sparse)
    numel += compressors::split_range(bucket.tensors[pos].numel, ranges, r).len;
  return numel;
}

void BucketExchange::lay_out_range(const compressors::BucketView& bucket,
                                   const compressors::ExchangePlan& plan, std::size_t ranges,
                                   std::size_t r, float* data, compressors::BucketView& view) {
  view = bucket;
  std::size_t numel = 0;
  for (std::size_t pos : plan.sparse) {
    const compressors::SplitRange range =
        compressors::split_range(bucket.tensors[pos].numel, ranges, r);
    view.tensors[pos].offset = numel;
    view.tensors[pos].numel = range.len;
    numel += range.len;
  }
  view.data = data;
  view.numel = numel;
}

// Note [Sparse allreduce over two levels]
void BucketExchange::exchange_split_levels(const Levels& levels,
                                           compressors::Compressor& compressor,
                                           const compressors::BucketView& bucket,
                                           const compressors::ExchangePlan& plan,
                                           TrafficKind kind) {
  const kernels::Stream& stream = compressor.stream();
  Communicator& local = *levels.local;
  Communicator& cross = *levels.cross;
  const auto ln = static_cast<std::size_t>(local.size());
  const auto nn = static_cast<std::size_t>(cross.size());
  const std::size_t n = ln * nn;
  const auto me = static_cast<std::size_t>(local.rank());
  const auto node = static_cast<std::size_t>(cross.rank());
  // Range r is owned by node r / ln's local rank r % ln. This rank merges its node's pairs of the
  // ranges m * ln + me (one per node m) and owns range node * ln + me.
  local_senders_.resize(ln);
  for (std::size_t q = 0; q < ln; ++q) local_senders_[q] = levels.world_rank[node * ln + q];
  cross_senders_.resize(nn);
  for (std::size_t m = 0; m < nn; ++m) cross_senders_[m] = levels.world_rank[m * ln + me];

  // Step 1: local rank q gets this rank's pairs of the ranges m * ln + q, m = 0..nn-1 (sizes
  // first: nn per local rank).
  send_sizes_.resize(ln * nn);
  send_words_.assign(ln, 0);
  std::size_t total = 0;
  for (std::size_t q = 0; q < ln; ++q) {
    for (std::size_t m = 0; m < nn; ++m) {
      const std::size_t words = to_[m * ln + q].size();
      send_sizes_[q * nn + m] = static_cast<std::int64_t>(words);
      send_words_[q] += words;
      total += words;
    }
  }
  level_counts_.assign(ln, nn);
  sizes_.resize(ln * nn);
  local.alltoallv(send_sizes_.data(), level_counts_, sizes_.data(), level_counts_, DataType::kInt64,
                  TrafficKind::kControl);
  entry_senders_.resize(ln * nn);
  for (std::size_t p = 0; p < ln; ++p)
    for (std::size_t m = 0; m < nn; ++m) entry_senders_[p * nn + m] = local_senders_[p];
  compressors::check_message_sizes(bucket, plan, sizes_, words_per_rank_, &entry_senders_);
  std::uint32_t* packed = packed_.reserve_discard(std::max<std::size_t>(total, 1), stream);
  std::size_t at = 0;
  for (std::size_t q = 0; q < ln; ++q) {
    for (std::size_t m = 0; m < nn; ++m) {
      const compressors::SparseMessageWriter& w = to_[m * ln + q];
      kernels::copy_bytes(packed + at, w.data(), w.size() * sizeof(std::uint32_t), stream);
      at += w.size();
    }
  }
  recv_words_.assign(ln, 0);
  std::size_t incoming = 0;
  for (std::size_t p = 0; p < ln; ++p) {
    for (std::size_t m = 0; m < nn; ++m) recv_words_[p] += words_per_rank_[p * nn + m];
    incoming += recv_words_[p];
  }
  std::uint32_t* received = received_.reserve_discard(std::max<std::size_t>(incoming, 1), stream);
  stream.synchronize();
  local.alltoallv(packed, send_words_, received, recv_words_, DataType::kInt32, kind);

  // What arrived is sender-major; each range's ln messages are put side by side, in local rank
  // order, and checked against that range.
  std::uint32_t* by_range = by_range_.reserve_discard(std::max<std::size_t>(incoming, 1), stream);
  merge_words_.resize(nn);
  merge_offset_.assign(nn, 0);
  at = 0;
  for (std::size_t m = 0; m < nn; ++m) {
    merge_offset_[m] = at;
    merge_words_[m].resize(ln);
    std::size_t from = 0;
    for (std::size_t p = 0; p < ln; ++p) {
      std::size_t src = from;
      for (std::size_t mm = 0; mm < m; ++mm) src += words_per_rank_[p * nn + mm];
      const std::size_t words = words_per_rank_[p * nn + m];
      kernels::copy_bytes(by_range + at, received + src, words * sizeof(std::uint32_t), stream);
      merge_words_[m][p] = words;
      at += words;
      from += recv_words_[p];
    }
  }
  // The sums: the nn ranges merged here, then the range this rank owns, back to back.
  std::size_t sums_numel = 0;
  for (std::size_t m = 0; m < nn; ++m) sums_numel += range_numel(bucket, plan, n, m * ln + me);
  sums_numel += range_numel(bucket, plan, n, node * ln + me);
  float* sums = zeroed_sums(sums_numel, stream);
  merge_views_.resize(nn);
  merge_segments_.resize(nn);
  std::size_t sums_at = 0;
  for (std::size_t m = 0; m < nn; ++m) {
    lay_out_range(bucket, plan, n, m * ln + me, sums + sums_at, merge_views_[m]);
    sums_at += merge_views_[m].numel;
    compressors::validate_sparse_messages(merge_views_[m], plan, by_range + merge_offset_[m],
                                          merge_words_[m], merge_segments_[m], stream,
                                          local_senders_);
  }
  lay_out_range(bucket, plan, n, node * ln + me, sums + sums_at, mine_);

  // Step 2: the node's sum of each range, cut to one share of k (node_merge_k): the rest goes
  // into this rank's residual.
  node_plan_ = plan;
  for (std::size_t t = 0; t < plan.k.size(); ++t)
    node_plan_.k[t] = compressors::node_merge_k(plan.k[t], n);
  merged_.resize(nn);
  for (std::size_t m = 0; m < nn; ++m) {
    merged_[m].clear();
    merged_[m].reserve(compressors::max_message_words(node_plan_), stream);
    merge_range(compressor, bucket, plan, node_plan_, n, m * ln + me, merge_views_[m],
                by_range + merge_offset_[m], merge_segments_[m], merged_[m]);
  }

  // Step 3: node m's rank `me` gets this node's merged pairs of range m * ln + me (sizes
  // first).
  const std::uint32_t* merged = alltoall_messages(cross, merged_, bucket, node_plan_,
                                                  &cross_senders_, kind, stream, cross_words_);
  compressors::validate_sparse_messages(mine_, node_plan_, merged, cross_words_, segments_, stream,
                                        cross_senders_);

  // Step 4: the owner keeps the largest of the nodes' sums (split_k, as the flat split).
  prepare_kept(plan, n, stream);
  merge_range(compressor, bucket, node_plan_, kept_plan_, n, node * ln + me, mine_, merged,
              segments_, kept_);
  sums_zeroed_ = true;  // every merge left its sums zero

  // Step 5: the kept pairs across (rank `me` of every node), then inside the node, so that every
  // rank holds every range's; each is checked against its range, naming the rank that kept it.
  const auto mine = static_cast<std::int64_t>(kept_.size());
  sizes_.resize(nn);
  ones_.assign(nn, 1);
  cross.allgatherv(&mine, 1, sizes_.data(), ones_, DataType::kInt64, TrafficKind::kControl);
  compressors::check_message_sizes(bucket, kept_plan_, sizes_, cross_words_, &cross_senders_);
  total = 0;
  for (std::size_t words : cross_words_) total += words;
  std::uint32_t* node_kept = node_kept_.reserve_discard(std::max<std::size_t>(total, 1), stream);
  stream.synchronize();
  cross.allgatherv(kept_.data(), kept_.size(), node_kept, cross_words_, DataType::kInt32, kind);
  send_sizes_.resize(nn);
  for (std::size_t m = 0; m < nn; ++m) send_sizes_[m] = static_cast<std::int64_t>(cross_words_[m]);
  sizes_.resize(ln * nn);
  local.allgatherv(send_sizes_.data(), nn, sizes_.data(), level_counts_, DataType::kInt64,
                   TrafficKind::kControl);
  // Entry q * nn + m is range m * ln + q's, kept by that range's owner.
  for (std::size_t q = 0; q < ln; ++q)
    for (std::size_t m = 0; m < nn; ++m) entry_senders_[q * nn + m] = levels.world_rank[m * ln + q];
  compressors::check_message_sizes(bucket, kept_plan_, sizes_, words_per_rank_, &entry_senders_);
  recv_words_.assign(ln, 0);
  incoming = 0;
  kept_words_.resize(n);
  kept_offset_.resize(n);
  for (std::size_t q = 0; q < ln; ++q) {
    for (std::size_t m = 0; m < nn; ++m) {
      const std::size_t words = words_per_rank_[q * nn + m];
      kept_words_[m * ln + q] = words;
      kept_offset_[m * ln + q] = incoming;
      recv_words_[q] += words;
      incoming += words;
    }
  }
  received_kept_.reserve_discard(std::max<std::size_t>(incoming, 1), stream);
  local.allgatherv(node_kept, total, received_kept_.data(), recv_words_, DataType::kInt32, kind);
  validate_kept(bucket, plan, n, &levels.world_rank, stream);
}

void BucketExchange::reselect_range(compressors::Compressor& compressor,
                                    const compressors::BucketView& bucket,
                                    const compressors::ExchangePlan& plan,
                                    const compressors::ExchangePlan& budget, std::size_t ranges,
                                    std::size_t r, const compressors::BucketView& sums,
                                    compressors::SparseMessageWriter& out) {
  for (std::size_t t = 0; t < plan.sparse.size(); ++t) {
    const compressors::TensorSlot& slot = bucket.tensors[plan.sparse[t]];
    const compressors::TensorSlot& part = sums.tensors[plan.sparse[t]];
    compressor.reselect(slot, sums.data + part.offset,
                        compressors::split_range(slot.numel, ranges, r).begin, part.numel,
                        budget.k[t], plan.sparse_wire, out);
  }
}

}  // namespace gw
