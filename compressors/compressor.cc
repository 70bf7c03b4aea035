#include "compressors/compressor.h"

#include <sstream>

#include "kernels/elementwise.h"

namespace gw::compressors {

std::string state_bytes(const Compressor& compressor) {
  std::ostringstream out;
  compressor.save_state(out);
  return out.str();
}

void load_state_bytes(Compressor& compressor, const std::string& bytes) {
  std::istringstream in(bytes);
  compressor.load_state(in);
}

void decode_dense(const BucketView& bucket, const ExchangePlan& plan, const EncodedBucket& reduced,
                  const kernels::Stream& stream) {
  std::size_t at = 0;
  for (std::size_t pos : plan.dense) {
    const TensorSlot& t = bucket.tensors[pos];
    float* dst = bucket.data + t.offset;
    if (plan.dense_wire == DenseWire::kFloat16) {
      kernels::cast_fp16_to_fp32(reduced.f16 + at, dst, t.numel, stream);
    } else if (reduced.f32 + at != dst) {
      kernels::copy_bytes(dst, reduced.f32 + at, t.numel * sizeof(float), stream);
    }
    at += t.numel;
  }
}

}  // namespace gw::compressors
