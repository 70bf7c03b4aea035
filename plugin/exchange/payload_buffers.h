// Where encode() writes one bucket's payload, kept and grown from step to step.
#pragma once

#include <cstddef>
#include <vector>

#include "compressors/compressor.h"
#include "kernels/half.h"
#include "kernels/stream.h"

namespace gw::exchange {

class PayloadBuffers {
 public:
  // The payload of `plan` (compressors::EncodedBucket): the dense part in place (an all-dense fp32
  // plan) or in a buffer of its own, fp32 or fp16, with any low-rank P factors after it; the
  // sparse part into one message, or under the split one message per rank.
  compressors::EncodedBucket lay_out(const compressors::BucketView& bucket,
                                     const compressors::ExchangePlan& plan, int world_size,
                                     const kernels::Stream& stream);
  // Words of this rank's sparse part as encode() wrote it (every destination's, under the split).
  std::size_t sparse_words() const;

 private:
  kernels::Buffer<float> dense_f32_;
  kernels::Buffer<Half> dense_f16_;
  compressors::SparseMessageWriter sparse_;
  std::vector<compressors::SparseMessageWriter> to_;
  bool split_ = false;
};

}  // namespace gw::exchange
