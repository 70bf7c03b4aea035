#include "compressors/fp16_compressor.h"

#include <algorithm>

#include "compressors/none_compressor.h"
#include "compressors/state_stream.h"
#include "kernels/update.h"

namespace gw::compressors {

void Fp16Compressor::plan_into(const BucketView& bucket, int /*world_size*/,
                               ExchangePlan& out) const {
  all_dense_plan(bucket, DenseWire::kFloat16, out);
}

void Fp16Compressor::encode(const BucketView& bucket, const ExchangePlan& /*plan*/, int world_size,
                            const EncodedBucket& out) {
  // Each rank sends its value / ranks, so the fp16 sum is the average (and stays in range).
  kernels::scale_to_fp16(bucket.data, 1.0f / static_cast<float>(world_size), out.f16, bucket.numel,
                         stream_);
}

void Fp16Compressor::save_state(std::ostream& out) const { save_arrays(out, name(), step_, {}); }

void Fp16Compressor::load_state(std::istream& in) { load_arrays(in, name(), &step_, {}); }

}  // namespace gw::compressors
