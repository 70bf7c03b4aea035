#include "compressors/sparsifying_compressor.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/elementwise.h"
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
  const bool split =
      options_.algo == SparsifyOptions::Algo::kSplit ||
      (options_.algo == SparsifyOptions::Algo::kAuto && world_size >= kSplitFromRanks);
  plan.sparse_algo = split                                             ? SparseAlgo::kSplit
                     : options_.algo == SparsifyOptions::Algo::kPadded ? SparseAlgo::kPadded
                                                                       : SparseAlgo::kAllgather;
  const bool compressing = schedule_.compressing(step_);
  const double sparsity = compressing ? schedule_.sparsity(step_) : 0.0;
  // Per tensor, so that buckets do not change the result
  // (Note [Fusion does not change the result]): the allgatherv sends a tensor's W words to each of
  // n - 1 ranks, the split about 3 W (n - 1) / n (its first step W (n - 1) / n, its last twice
  // that); a ring allreduce 2 N (n - 1) / n.
  const std::size_t n = static_cast<std::size_t>(world_size);
  std::size_t candidates = 0;
  for (std::size_t pos = 0; pos < bucket.tensors.size(); ++pos) {
    const std::size_t numel = bucket.tensors[pos].numel;
    if (compressing && numel >= options_.min_numel) {
      ++candidates;
      const std::size_t k =
          std::max(sparse_count(numel, sparsity), std::min(numel, options_.min_k));
      const std::size_t words = is_compact(options_.wire)
                                    ? 2 + (k * (16 + wire_value_bits(options_.wire)) + 31) / 32
                                    : 1 + 2 * k;
      const bool dense_moves_less = split ? 3 * words >= 2 * numel : n * words >= 2 * numel;
      if (!options_.dense_fallback || !dense_moves_less) {
        plan.sparse.push_back(pos);
        plan.k.push_back(k);
        continue;
      }
    }
    plan.dense.push_back(pos);
  }
  plan.dense_fallback = candidates > 0 && plan.sparse.empty();
}

std::size_t SparsifyingCompressor::send_top_k(float* acc, const TensorSlot& t, std::size_t k,
                                              const ExchangePlan& plan, const EncodedBucket& out) {
  const std::size_t numel = t.numel;
  const SparseWire wire = plan.sparse_wire;
  std::uint32_t* selected = selected_.reserve_discard(std::min(k, numel), stream_);
  const std::size_t count = selector_.select(acc, numel, k, options_.sample_ratio,
                                             selection_seed(step_, t.parameter), selected, stream_);
  if (plan.sparse_algo == SparseAlgo::kSplit) {
    if (out.sparse_to == nullptr || out.sparse_to->empty()) {
      throw std::logic_error("a split plan needs a message per rank (EncodedBucket::sparse_to)");
    }
    std::vector<SparseMessageWriter>& to = *out.sparse_to;
    const std::size_t ranks = to.size();
    const std::size_t region = split_region(numel, ranks);
    std::uint32_t* relative = relative_.reserve_discard(count, stream_);
    std::uint32_t* starts = starts_.reserve_discard(ranks + 1, stream_);
    kernels::split_by_region(selected, count, static_cast<std::uint32_t>(region), ranks, relative,
                             starts, stream_);
    starts_host_.resize(ranks + 1);
    kernels::copy_bytes(starts_host_.data(), starts, (ranks + 1) * sizeof(std::uint32_t), stream_);
    stream_.synchronize();
    // Each range is its own segment, so what the wire drops is taken out range by range: a
    // low-bit wire's scales are per block of a segment (Note [Low-bit wire values]).
    for (std::size_t r = 0; r < ranks; ++r) {
      const SplitRange range = split_range(numel, ranks, r);
      const std::size_t n_r = starts_host_[r + 1] - starts_host_[r];
      to[r].append(relative + starts_host_[r], n_r, acc + range.begin, stream_, wire);
      keep_what_the_wire_drops(acc + range.begin, relative + starts_host_[r], n_r, wire);
    }
  } else {
    out.sparse->append(selected, count, acc, stream_, wire);
    keep_what_the_wire_drops(acc, selected, count, wire);
  }
  return count;
}

void SparsifyingCompressor::keep_what_the_wire_drops(float* x, const std::uint32_t* indices,
                                                     std::size_t count, SparseWire wire) {
  if (is_compact(wire)) {
    kernels::keep_wire_error_at(x, indices, count, stream_, wire_value_bits(wire));
  } else {
    kernels::zero_at(x, indices, count, stream_);
  }
}

std::size_t SparsifyingCompressor::reselect(const TensorSlot& t, float* sums, std::size_t begin,
                                            std::size_t len, std::size_t k, SparseWire wire,
                                            SparseMessageWriter& out) {
  std::size_t count = 0;
  std::uint32_t* kept = nullptr;
  if (len > 0 && k > 0) {
    kept = selected_.reserve_discard(std::min(k, len), stream_);
    // Another draw than the encoder's for this tensor and step.
    count = selector_.select(sums, len, k, options_.sample_ratio,
                             selection_seed(step_, t.parameter) ^ 0x5bd1e995u, kept, stream_);
  }
  out.append(kept, count, sums, stream_, wire);  // an empty segment when nothing is kept
  keep_what_the_wire_drops(sums, kept, count, wire);
  kernels::axpy(1.0f, sums, feedback(t.parameter) + begin, len, stream_);
  return count;
}

std::size_t SparsifyingCompressor::reselect_among(const TensorSlot& t, float* sums,
                                                  std::size_t begin,
                                                  const std::uint32_t* candidates,
                                                  std::size_t count, std::size_t k, SparseWire wire,
                                                  SparseMessageWriter& out) {
  const std::size_t kept = std::min(k, count);
  // Every candidate is kept unless there are more than k: only then is a copy cut down.
  const std::uint32_t* indices = candidates;
  if (kept > 0 && kept < count) {
    std::uint32_t* cut = selected_.reserve_discard(count, stream_);
    kernels::copy_bytes(cut, candidates, count * sizeof(std::uint32_t), stream_);
    std::uint32_t* scratch = among_keys_.reserve_discard(count, stream_);
    kernels::keep_top_k(sums, cut, count, kept, scratch, stream_);
    indices = cut;
  }
  out.append(indices, kept, sums, stream_, wire);  // an empty segment when nothing is kept
  keep_what_the_wire_drops(sums, indices, kept, wire);
  // What is left at the candidates (the dropped sums, the wire's error) into the residual, then
  // the sums back to zero there.
  if (count > 0) {
    std::uint32_t* pairs = among_pairs_.reserve_discard(2 * count, stream_);
    kernels::pack_pairs(candidates, count, sums, pairs, stream_);
    kernels::scatter_add_pairs(pairs, count, feedback(t.parameter) + begin, stream_);
    kernels::zero_at(sums, candidates, count, stream_);
  }
  return kept;
}

}  // namespace gw::compressors
