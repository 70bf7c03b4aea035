#include "compressors/sparsifying_compressor.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/sparse.h"
#include "kernels/sparse_wire.h"

namespace gw::compressors {
namespace {

std::uint64_t selection_seed(std::int64_t step, std::size_t parameter) {
  // splitmix64 of (step, parameter): reproducible runs, and different samples every step.
  std::uint64_t z = static_cast<std::uint64_t>(step) * 0x9E3779B97F4A7C15ull +
                    static_cast<std::uint64_t>(parameter) * 0xD1B54A32D192ED03ull + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

SparsifyingCompressor::SparsifyingCompressor(std::vector<std::size_t> numels,
                                             SparsifyOptions options)
    : numels_(std::move(numels)),
      options_(std::move(options)),
      schedule_(options_.sparsity, options_.rampup_begin_step, options_.rampup_steps) {
  if (!(options_.sample_ratio > 0.0 && options_.sample_ratio <= 1.0)) {
    throw std::invalid_argument("sample ratio must be in (0, 1], got " +
                                std::to_string(options_.sample_ratio));
  }
  if (options_.min_numel == 0) throw std::invalid_argument("min_numel must be >= 1");
  for (std::size_t p = 0; p < numels_.size(); ++p) {
    if (numels_[p] > 0xFFFFFFFFull) {
      throw std::invalid_argument("parameter " + std::to_string(p) + " has " +
                                  std::to_string(numels_[p]) +
                                  " elements; sparse indices are 32-bit");
    }
  }
}

void SparsifyingCompressor::plan_into(const BucketView& bucket, int world_size,
                                      ExchangePlan& plan) const {
  plan.clear();
  plan.sparse_wire = options_.wire;
  const bool compressing = schedule_.compressing(step_);
  const double sparsity = compressing ? schedule_.sparsity(step_) : 0.0;
  std::size_t sparse_words = 0, sparse_numel = 0;
  for (std::size_t pos = 0; pos < bucket.tensors.size(); ++pos) {
    const std::size_t numel = bucket.tensors[pos].numel;
    if (compressing && numel >= options_.min_numel) {
      const std::size_t k =
          std::max(sparse_count(numel, sparsity), std::min(numel, options_.min_k));
      plan.sparse.push_back(pos);
      plan.k.push_back(k);
      sparse_words += options_.wire == SparseWire::kCompact ? 2 + k : 1 + 2 * k;
      sparse_numel += numel;
    } else {
      plan.dense.push_back(pos);
    }
  }
  if (options_.dense_fallback && !plan.sparse.empty() &&
      static_cast<std::size_t>(world_size) * sparse_words >= 2 * sparse_numel) {
    plan.dense.clear();
    for (std::size_t pos = 0; pos < bucket.tensors.size(); ++pos) plan.dense.push_back(pos);
    plan.sparse.clear();
    plan.k.clear();
    plan.dense_fallback = true;
  }
}

std::size_t SparsifyingCompressor::send_top_k(float* acc, std::size_t numel, std::size_t k,
                                              std::size_t parameter, SparseWire wire,
                                              SparseMessageWriter& out) {
  std::uint32_t* selected = selected_.reserve_discard(std::min(k, numel), stream_);
  const std::size_t count = selector_.select(acc, numel, k, options_.sample_ratio,
                                             selection_seed(step_, parameter), selected, stream_);
  out.append(selected, count, acc, stream_, wire);
  if (wire == SparseWire::kCompact) {
    kernels::keep_wire_error_at(acc, selected, count, stream_);
  } else {
    kernels::zero_at(acc, selected, count, stream_);
  }
  return count;
}

}  // namespace gw::compressors
