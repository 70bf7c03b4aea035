#include "compressors/dgc_compressor.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "compressors/state_stream.h"
#include "kernels/elementwise.h"

namespace gw::compressors {
namespace {

// u = m u + g; out = u (or g + m u). out may alias g. See Note [DGC takes over the momentum].
void momentum_to(const float* g, float* __restrict u, float* out, std::size_t n, float m,
                 bool nesterov) {
  if (nesterov) {
    for (std::size_t i = 0; i < n; ++i) {
      const float gi = g[i];
      const float ui = m * u[i] + gi;
      u[i] = ui;
      out[i] = gi + m * ui;
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      const float ui = m * u[i] + g[i];
      u[i] = ui;
      out[i] = ui;
    }
  }
}

// u = m u + g; v += u (or g + m u).
void momentum_accumulate(const float* __restrict g, float* __restrict u, float* __restrict v,
                         std::size_t n, float m, bool nesterov) {
  if (nesterov) {
    for (std::size_t i = 0; i < n; ++i) {
      const float ui = m * u[i] + g[i];
      u[i] = ui;
      v[i] += g[i] + m * ui;
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      const float ui = m * u[i] + g[i];
      u[i] = ui;
      v[i] += ui;
    }
  }
}

}  // namespace

DgcCompressor::DgcCompressor(std::vector<std::size_t> numels, DgcOptions options)
    : SparsifyingCompressor(std::move(numels), options.sparsify),
      options_(std::move(options)),
      momentum_(numels_.size()),
      accumulator_(numels_.size()) {
  if (!(options_.momentum >= 0.0 && options_.momentum < 1.0)) {
    throw std::invalid_argument("dgc: momentum must be in [0, 1), got " +
                                std::to_string(options_.momentum));
  }
  if (!(options_.clip_norm >= 0.0)) {
    throw std::invalid_argument("dgc: clip norm must be >= 0, got " +
                                std::to_string(options_.clip_norm));
  }
  for (std::size_t p = 0; p < numels_.size(); ++p) {
    momentum_[p].assign(numels_[p], 0.0f);
    if (sparsifiable(p)) accumulator_[p].assign(numels_[p], 0.0f);
  }
}

void DgcCompressor::clip(float* g, std::size_t numel, int world_size) const {
  const double limit = options_.clip_norm / std::sqrt(static_cast<double>(world_size));
  const double norm = std::sqrt(kernels::sum_of_squares(g, numel, kernels::Stream::host()));
  if (norm > limit) kernels::scale(g, static_cast<float>(limit / norm), numel, kernels::Stream::host());
}

void DgcCompressor::encode(const BucketView& bucket, const ExchangePlan& plan, int world_size,
                           const EncodedBucket& out) {
  const auto m = static_cast<float>(options_.momentum);
  const bool nesterov = options_.nesterov;
  std::size_t at = 0;
  for (std::size_t pos : plan.dense) {
    const TensorSlot& t = bucket.tensors[pos];
    const float* g = bucket.data + t.offset;
    float* dst = out.f32 + at;
    float* u = momentum_[t.parameter].data();
    std::vector<float>& v = accumulator_[t.parameter];
    momentum_to(g, u, dst, t.numel, m, nesterov);
    if (!v.empty()) {
      // Sent whole this step: v + c goes out and v starts again from zero.
      for (std::size_t i = 0; i < t.numel; ++i) dst[i] += v[i];
      std::fill(v.begin(), v.end(), 0.0f);
    }
    at += t.numel;
  }
  for (std::size_t j = 0; j < plan.sparse.size(); ++j) {
    const TensorSlot& t = bucket.tensors[plan.sparse[j]];
    float* g = bucket.data + t.offset;
    float* u = momentum_[t.parameter].data();
    float* v = accumulator_[t.parameter].data();
    if (options_.clip_norm > 0.0) clip(g, t.numel, world_size);
    momentum_accumulate(g, u, v, t.numel, m, nesterov);
    const std::size_t count = send_top_k(v, t.numel, plan.k[j], t.parameter, *out.sparse);
    if (options_.momentum_masking) {
      const std::uint32_t* idx = selected();
      for (std::size_t i = 0; i < count; ++i) u[idx[i]] = 0.0f;
    }
  }
}

void DgcCompressor::save_state(std::ostream& out) const {
  std::vector<const std::vector<float>*> arrays;
  for (const auto& u : momentum_) arrays.push_back(&u);
  for (const auto& v : accumulator_) arrays.push_back(&v);
  save_arrays(out, name(), step_, arrays);
}

void DgcCompressor::load_state(std::istream& in) {
  std::vector<std::vector<float>*> arrays;
  for (auto& u : momentum_) arrays.push_back(&u);
  for (auto& v : accumulator_) arrays.push_back(&v);
  load_arrays(in, name(), &step_, arrays);
}

}  // namespace gw::compressors
