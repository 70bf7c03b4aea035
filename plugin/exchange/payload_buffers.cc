#include "plugin/exchange/payload_buffers.h"

namespace gw::exchange {

compressors::EncodedBucket PayloadBuffers::lay_out(const compressors::BucketView& bucket,
                                                   const compressors::ExchangePlan& plan,
                                                   int world_size, const kernels::Stream& stream) {
  compressors::EncodedBucket payload;
  for (std::size_t pos : plan.dense) payload.dense_count += bucket.tensors[pos].numel;
  // The low-rank tensors' P factors ride in the dense part's allreduce, after it.
  if (plan.dense_wire == compressors::DenseWire::kFloat16) {
    payload.f16 = dense_f16_.reserve_discard(payload.dense_count, stream);
  } else if (plan.all_dense()) {
    payload.f32 = bucket.data;  // in place
  } else {
    payload.f32 = dense_f32_.reserve_discard(payload.dense_count + plan.p_count(), stream);
    payload.factors = payload.f32 + payload.dense_count;
  }
  split_ = plan.sparse_algo == compressors::SparseAlgo::kSplit && !plan.sparse.empty();
  if (split_) {
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

std::size_t PayloadBuffers::sparse_words() const {
  if (!split_) return sparse_.size();
  std::size_t words = 0;
  for (const compressors::SparseMessageWriter& w : to_) words += w.size();
  return words;
}

}  // namespace gw::exchange
