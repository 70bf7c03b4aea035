#include "compressors/topk_compressor.h"

#include <algorithm>
#include <cstring>

#include "compressors/state_stream.h"

namespace gw::compressors {

TopkCompressor::TopkCompressor(std::vector<std::size_t> numels, SparsifyOptions options)
    : SparsifyingCompressor(std::move(numels), std::move(options)), residual_(numels_.size()) {
  for (std::size_t p = 0; p < numels_.size(); ++p) {
    if (sparsifiable(p)) residual_[p].assign(numels_[p], 0.0f);
  }
}

void TopkCompressor::encode(const BucketView& bucket, const ExchangePlan& plan, int /*world_size*/,
                            const EncodedBucket& out) {
  std::size_t at = 0;
  for (std::size_t pos : plan.dense) {
    const TensorSlot& t = bucket.tensors[pos];
    const float* g = bucket.data + t.offset;
    float* dst = out.f32 + at;
    std::vector<float>& r = residual_[t.parameter];
    if (!r.empty()) {
      // Dense for this step (warm-up or fallback): the whole accumulation goes out.
      for (std::size_t i = 0; i < t.numel; ++i) dst[i] = g[i] + r[i];
      std::fill(r.begin(), r.end(), 0.0f);
    } else if (dst != g) {
      std::memcpy(dst, g, t.numel * sizeof(float));
    }
    at += t.numel;
  }
  for (std::size_t j = 0; j < plan.sparse.size(); ++j) {
    const TensorSlot& t = bucket.tensors[plan.sparse[j]];
    const float* g = bucket.data + t.offset;
    float* r = residual_[t.parameter].data();
    for (std::size_t i = 0; i < t.numel; ++i) r[i] += g[i];
    send_top_k(r, t.numel, plan.k[j], t.parameter, *out.sparse);
  }
}

void TopkCompressor::save_state(std::ostream& out) const {
  std::vector<const std::vector<float>*> arrays;
  for (const auto& r : residual_) arrays.push_back(&r);
  save_arrays(out, name(), step_, arrays);
}

void TopkCompressor::load_state(std::istream& in) {
  std::vector<std::vector<float>*> arrays;
  for (auto& r : residual_) arrays.push_back(&r);
  load_arrays(in, name(), &step_, arrays);
}

}  // namespace gw::compressors
