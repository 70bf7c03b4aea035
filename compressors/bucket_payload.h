// One bucket's payload for one step: its plan, and what encode() wrote, in buffers kept and grown
// from step to step; then, after the exchange, the decode of what came back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "compressors/compressor.h"
#include "compressors/sparse_inbox.h"
#include "kernels/half.h"
#include "kernels/stream.h"

namespace gw::compressors {

// The order the split's per-rank messages are packed in for its first alltoallv: destination q
// of `local` gets the ranges m * local + q of each of the `nodes` in node order
// (Note [Sparse allreduce over two levels]); the flat split is one node of every rank.
struct SplitPacking {
  std::size_t local = 1, nodes = 1;
};

class BucketPayload {
 public:
  // Plans `bucket` with `compressor` for `world_size` ranks, lays out where encode writes (the
  // dense part in place for an all-dense fp32 plan, else in a buffer of its own, fp32 or fp16,
  // with any low-rank P factors after it; the sparse part in one message, or under the split one
  // per rank), encodes, and under the split packs the per-rank messages back to back in
  // `packing`'s order. plan() and the payload hold until the next call.
  const EncodedBucket& encode(Compressor& compressor, const BucketView& bucket, int world_size,
                              SplitPacking packing);
  const ExchangePlan& plan() const { return plan_; }
  const EncodedBucket& encoded() const { return payload_; }
  // Words of this rank's sparse part (every destination's, under the split).
  std::size_t sparse_words() const;
  // Under the split: the messages packed, and each one's words, in pack order.
  const std::uint32_t* packed() const { return packed_.data(); }
  const std::vector<std::size_t>& packed_words() const { return packed_words_; }

  // After the exchange, on `stream`: checks every message of `sparse` (null: no sparse part)
  // against the bucket before anything is written, then writes the reduced dense part back into
  // the bucket's dense tensors (fp16 cast back to fp32), P Q^T into each low-rank tensor (`q`: the
  // summed Q factors, null without any) and the sparse part's sum into its sparse tensors.
  void decode(const BucketView& bucket, LowRankRound* low_rank, const float* q,
              SparseInbox* sparse, const kernels::Stream& stream) const;

 private:
  void lay_out(const BucketView& bucket, int world_size, const kernels::Stream& stream);
  void pack(SplitPacking packing, const kernels::Stream& stream);

  ExchangePlan plan_;
  EncodedBucket payload_;
  kernels::Buffer<float> dense_f32_;
  kernels::Buffer<Half> dense_f16_;
  SparseMessageWriter sparse_;
  std::vector<SparseMessageWriter> to_;
  kernels::Buffer<std::uint32_t> packed_;
  std::vector<std::size_t> packed_words_;
  std::vector<const SparseMessageWriter*> pack_order_;
  bool split_ = false;
};

}  // namespace gw::compressors
