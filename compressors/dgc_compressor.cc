#include "compressors/dgc_compressor.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/elementwise.h"
#include "kernels/sparse.h"
#include "kernels/update.h"

namespace gw::compressors {

DgcCompressor::DgcCompressor(std::vector<std::size_t> numels, DgcOptions options)
    : SparsifyingCompressor(std::move(numels), options.sparsify), options_(std::move(options)) {
  if (!(options_.momentum >= 0.0 && options_.momentum < 1.0)) {
    throw std::invalid_argument("dgc: momentum must be in [0, 1), got " +
                                std::to_string(options_.momentum));
  }
  if (!(options_.clip_norm >= 0.0)) {
    throw std::invalid_argument("dgc: clip norm must be >= 0, got " +
                                std::to_string(options_.clip_norm));
  }
  std::vector<bool> every(numels_.size(), true), sparsified(numels_.size());
  for (std::size_t p = 0; p < numels_.size(); ++p) sparsified[p] = sparsifiable(p);
  momentum_ = StateArrays(numels_, every);
  accumulator_ = StateArrays(numels_, sparsified);
}

// See Note [DGC takes over the momentum] for u and v.
void DgcCompressor::encode(const BucketView& bucket, const ExchangePlan& plan, int world_size,
                           const EncodedBucket& out) {
  const auto m = static_cast<float>(options_.momentum);
  const bool nesterov = options_.nesterov;
  std::size_t at = 0;
  for (std::size_t pos : plan.dense) {
    const TensorSlot& t = bucket.tensors[pos];
    float* dst = out.f32 + at;
    kernels::momentum_to(bucket.data + t.offset, momentum_.data(t.parameter), dst, t.numel, m,
                         nesterov, stream_);
    if (!accumulator_.empty(t.parameter)) {
      // Sent whole this step: v + c goes out and v starts again from zero.
      float* v = accumulator_.data(t.parameter);
      kernels::axpy(1.0f, v, dst, t.numel, stream_);
      kernels::fill_zero(v, t.numel * sizeof(float), stream_);
    }
    at += t.numel;
  }
  for (std::size_t j = 0; j < plan.sparse.size(); ++j) {
    const TensorSlot& t = bucket.tensors[plan.sparse[j]];
    float* g = bucket.data + t.offset;
    float* u = momentum_.data(t.parameter);
    float* v = accumulator_.data(t.parameter);
    if (options_.clip_norm > 0.0) {
      kernels::clip_by_norm(
          g, t.numel, options_.clip_norm / std::sqrt(static_cast<double>(world_size)), stream_);
    }
    kernels::momentum_accumulate(g, u, v, t.numel, m, nesterov, stream_);
    const std::size_t count = send_top_k(v, t, plan.k[j], plan, out);
    if (options_.momentum_masking) kernels::zero_at(u, selected(), count, stream_);
  }
}

void DgcCompressor::save_state(std::ostream& out) const {
  save_state_arrays(out, name(), step_, {&momentum_, &accumulator_});
}

void DgcCompressor::load_state(std::istream& in) {
  load_state_arrays(in, name(), &step_, {&momentum_, &accumulator_});
}

}  // namespace gw::compressors
