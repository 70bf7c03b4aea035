// What the multi-rank tests of the sparse exchange (by split, flat and over two levels) share: the
// compressor options, the tensor sizes, a gradient, and the residuals read back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "compressors/topk_compressor.h"

namespace gw::testing {

// Sizes with the edges in them: one element (some ranks' ranges empty), fewer elements than
// ranks at 8, a prime, and one that no world size tested divides evenly.
inline const std::vector<std::size_t>& sparse_numels() {
  static const std::vector<std::size_t> numels = {3001, 1, 7, 997, 40};
  return numels;
}

// Rank r's gradient at a step: normal values, a few large ones so that ranks agree on some
// indices and disagree on others.
inline std::vector<float> sparse_gradient(int rank, int step, std::size_t n) {
  std::mt19937_64 rng(1000 * static_cast<std::uint64_t>(step) + static_cast<std::uint64_t>(rank));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> g(n);
  for (std::size_t i = 0; i < n; ++i) g[i] = normal(rng) * (i % 97 == 0 ? 20.0f : 1.0f);
  return g;
}

// topk at sparsity 0.9 with no dense fallback: the sparse path at every size, which is what is
// tested.
inline compressors::SparsifyOptions sparse_options(compressors::SparsifyOptions::Algo algo,
                                                   compressors::SparseWire wire) {
  compressors::SparsifyOptions o;
  o.sparsity = {0.9};
  o.min_k = 0;
  o.wire = wire;
  o.algo = algo;
  o.dense_fallback = false;
  return o;
}

// Every tensor's residual, back to back.
inline std::vector<float> all_residuals(const compressors::TopkCompressor& c) {
  std::vector<float> r;
  for (std::size_t p = 0; p < sparse_numels().size(); ++p) {
    const std::vector<float> part = c.residual(p);
    r.insert(r.end(), part.begin(), part.end());
  }
  return r;
}

}  // namespace gw::testing
