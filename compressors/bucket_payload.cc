#include "compressors/bucket_payload.h"

#include <stdexcept>
#include <string>

#include "compressors/split_ranges.h"

namespace gw::compressors {

const EncodedBucket& BucketPayload::encode(Compressor& compressor, const BucketView& bucket,
                                           int world_size, SplitPacking packing) {
  const kernels::Stream& stream = compressor.stream();
  compressor.plan_into(bucket, world_size, plan_);
  lay_out(bucket, world_size, stream);
  compressor.encode(bucket, plan_, world_size, payload_);
  if (split_) pack(packing, stream);
  return payload_;
}

void BucketPayload::lay_out(const BucketView& bucket, int world_size,
                            const kernels::Stream& stream) {
  payload_ = EncodedBucket{};
  for (std::size_t pos : plan_.dense) payload_.dense_count += bucket.tensors[pos].numel;
  // The low-rank tensors' P factors ride in the dense part's allreduce, after it.
  if (plan_.dense_wire == DenseWire::kFloat16) {
    payload_.f16 = dense_f16_.reserve_discard(payload_.dense_count, stream);
  } else if (plan_.all_dense()) {
    payload_.f32 = bucket.data;  // in place
  } else {
    payload_.f32 = dense_f32_.reserve_discard(payload_.dense_count + plan_.p_count(), stream);
    payload_.factors = payload_.f32 + payload_.dense_count;
  }
  split_ = plan_.sparse_algo == SparseAlgo::kSplit && !plan_.sparse.empty();
  if (split_) {
    to_.resize(static_cast<std::size_t>(world_size));
    for (SparseMessageWriter& w : to_) {
      w.clear();
      w.reserve(max_message_words(plan_), stream);
    }
    payload_.sparse_to = &to_;
  } else {
    sparse_.clear();
    sparse_.reserve(max_message_words(plan_), stream);
    payload_.sparse = &sparse_;
  }
}

void BucketPayload::pack(SplitPacking packing, const kernels::Stream& stream) {
  if (packing.local * packing.nodes != to_.size()) {
    throw std::logic_error("bucket payload: a split packing of " + std::to_string(packing.nodes) +
                           " nodes of " + std::to_string(packing.local) + " ranks for " +
                           std::to_string(to_.size()) + " ranks");
  }
  pack_order_.clear();
  for (std::size_t q = 0; q < packing.local; ++q)
    for (std::size_t m = 0; m < packing.nodes; ++m) pack_order_.push_back(&to_[m * packing.local + q]);
  pack_messages(pack_order_, packed_, packed_words_, stream);
}

std::size_t BucketPayload::sparse_words() const {
  if (!split_) return sparse_.size();
  std::size_t words = 0;
  for (const SparseMessageWriter& w : to_) words += w.size();
  return words;
}

void BucketPayload::decode(const BucketView& bucket, LowRankRound* low_rank, const float* q,
                           SparseInbox* sparse, const kernels::Stream& stream) const {
  if (sparse) sparse->check(bucket, stream);
  decode_dense(bucket, plan_, payload_, stream);
  if (q) low_rank->reconstruct(bucket, plan_, payload_.factors, q);
  if (sparse) sparse->write(stream);
}

}  // namespace gw::compressors
