#include "compressors/fp16_compressor.h"

#include <algorithm>

#include "compressors/none_compressor.h"
#include "compressors/state_stream.h"
#include "kernels/elementwise.h"

namespace gw::compressors {

void Fp16Compressor::plan_into(const BucketView& bucket, int /*world_size*/,
                               ExchangePlan& out) const {
  all_dense_plan(bucket, DenseWire::kFloat16, out);
}

void Fp16Compressor::encode(const BucketView& bucket, const ExchangePlan& /*plan*/, int world_size,
                            const EncodedBucket& out) {
  // Scale and cast in cache-sized chunks: one pass over memory, no scratch the size of the bucket.
  const float inv = 1.0f / static_cast<float>(world_size);
  constexpr std::size_t kChunk = 4096;
  float chunk[kChunk];
  for (std::size_t i = 0; i < bucket.numel; i += kChunk) {
    const std::size_t m = std::min(kChunk, bucket.numel - i);
    for (std::size_t j = 0; j < m; ++j) chunk[j] = bucket.data[i + j] * inv;
    kernels::cast_fp32_to_fp16(chunk, out.f16 + i, m, kernels::Stream::host());
  }
}

void Fp16Compressor::save_state(std::ostream& out) const { save_arrays(out, name(), step_, {}); }

void Fp16Compressor::load_state(std::istream& in) { load_arrays(in, name(), &step_, {}); }

}  // namespace gw::compressors
