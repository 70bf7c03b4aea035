#include "compressors/topk_compressor.h"

#include "kernels/elementwise.h"

namespace gw::compressors {

TopkCompressor::TopkCompressor(std::vector<std::size_t> numels, SparsifyOptions options)
    : SparsifyingCompressor(std::move(numels), std::move(options)) {
  std::vector<bool> present(numels_.size());
  for (std::size_t p = 0; p < numels_.size(); ++p) present[p] = sparsifiable(p);
  residual_ = StateArrays(numels_, present);
}

void TopkCompressor::encode(const BucketView& bucket, const ExchangePlan& plan, int /*world_size*/,
                            const EncodedBucket& out) {
  std::size_t at = 0;
  for (std::size_t pos : plan.dense) {
    const TensorSlot& t = bucket.tensors[pos];
    const float* g = bucket.data + t.offset;
    float* dst = out.f32 + at;
    if (!residual_.empty(t.parameter)) {
      // Dense for this step (warm-up or fallback): the whole accumulation (r + g, one rounding as
      // g + r) goes out, and r starts again from zero.
      float* r = residual_.data(t.parameter);
      kernels::axpy(1.0f, g, r, t.numel, stream_);
      kernels::copy_bytes(dst, r, t.numel * sizeof(float), stream_);
      kernels::fill_zero(r, t.numel * sizeof(float), stream_);
    } else if (dst != g) {
      kernels::copy_bytes(dst, g, t.numel * sizeof(float), stream_);
    }
    at += t.numel;
  }
  for (std::size_t j = 0; j < plan.sparse.size(); ++j) {
    const TensorSlot& t = bucket.tensors[plan.sparse[j]];
    const float* g = bucket.data + t.offset;
    float* r = residual_.data(t.parameter);
    kernels::axpy(1.0f, g, r, t.numel, stream_);
    send_top_k(r, t, plan.k[j], plan, out);
  }
}

void TopkCompressor::save_state(std::ostream& out) const {
  save_state_arrays(out, name(), step_, {&residual_});
}

void TopkCompressor::load_state(std::istream& in) {
  load_state_arrays(in, name(), &step_, {&residual_});
}

}  // namespace gw::compressors
