#include "compressors/none_compressor.h"

#include "compressors/state_stream.h"
#include "kernels/stream.h"

namespace gw::compressors {

void all_dense_plan(const BucketView& bucket, DenseWire wire, ExchangePlan& out) {
  out.clear();
  out.dense_wire = wire;
  for (std::size_t pos = 0; pos < bucket.tensors.size(); ++pos) out.dense.push_back(pos);
}

void NoneCompressor::plan_into(const BucketView& bucket, int /*world_size*/,
                               ExchangePlan& out) const {
  all_dense_plan(bucket, DenseWire::kFloat32, out);
}

void NoneCompressor::encode(const BucketView& bucket, const ExchangePlan& /*plan*/,
                            int /*world_size*/, const EncodedBucket& out) {
  // In place when the exchange runs on the bucket itself; otherwise a copy.
  if (out.f32 != bucket.data) {
    kernels::copy_bytes(out.f32, bucket.data, bucket.numel * sizeof(float), stream_);
  }
}

void NoneCompressor::save_state(std::ostream& out) const { save_arrays(out, name(), step_, {}); }

void NoneCompressor::load_state(std::istream& in) { load_arrays(in, name(), &step_, {}); }

}  // namespace gw::compressors
