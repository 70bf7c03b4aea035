#include "compressors/compressor.h"

#include <cstring>
#include <stdexcept>

#include "kernels/elementwise.h"

namespace gw::compressors {

std::size_t Compressor::reselect(const TensorSlot& /*t*/, float* /*sums*/, std::size_t /*begin*/,
                                 std::size_t /*len*/, std::size_t /*k*/, SparseWire /*wire*/,
                                 SparseMessageWriter& /*out*/) {
  throw std::logic_error("compressor " + name() + " sends no sparse part to reselect from");
}

std::size_t Compressor::reselect_among(const TensorSlot& /*t*/, float* /*sums*/,
                                       std::size_t /*begin*/, const std::uint32_t* /*candidates*/,
                                       std::size_t /*count*/, std::size_t /*k*/,
                                       SparseWire /*wire*/, SparseMessageWriter& /*out*/) {
  throw std::logic_error("compressor " + name() + " sends no sparse part to reselect from");
}

void Compressor::project(const BucketView& /*bucket*/, const ExchangePlan& /*plan*/, float* /*p*/,
                         float* /*q*/) {
  throw std::logic_error("compressor " + name() + " sends no low-rank factors");
}

void Compressor::reconstruct(const BucketView& /*bucket*/, const ExchangePlan& /*plan*/,
                             const float* /*p*/, const float* /*q*/) {
  throw std::logic_error("compressor " + name() + " sends no low-rank factors");
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
