// The decisions of a sampled top-k selection (Note [Sampled top-k], kernels/cpu/topk_select.cc),
// written once for the host TopkSelector and the device one (kernels/thrust/topk_thrust.h), so
// that both take the same path, sample the same elements and try the same thresholds, and so
// select the same indices. Internal to kernels/. Plain C++: nvcc compiles it as host code.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "kernels/sparse.h"

namespace gw::kernels::topk_rules {

inline constexpr std::size_t kSampleBlock = kSampleBlockFloats;  // 64 bytes
inline constexpr std::size_t kMinCapacity = 1024;
inline constexpr double kCandidateFactor = 1.3;  // candidates aimed at, per selected element
inline constexpr std::size_t kSampleMinPerSelected = 64;
inline constexpr int kMaxRescans = 2;
inline constexpr std::uint32_t kSignBit = 0x80000000u;
inline constexpr std::uint32_t kInfKey = 0x7f800000u;
inline constexpr std::uint64_t kSplitMixIncrement = 0x9e3779b97f4a7c15ull;

inline std::uint32_t magnitude_key(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits & ~kSignBit;
}

inline float key_magnitude(std::uint32_t key) {
  float x;
  std::memcpy(&x, &key, sizeof x);
  return x;
}

// TopkSelector::select's argument checks, before v is read: std::invalid_argument.
inline void check_select_arguments(std::size_t n, double sample_ratio) {
  if (!(sample_ratio > 0.0 && sample_ratio <= 1.0)) {
    throw std::invalid_argument("TopkSelector::select: sample_ratio must be in (0, 1], got " +
                                std::to_string(sample_ratio));
  }
  if (n > std::numeric_limits<std::uint32_t>::max()) {
    throw std::invalid_argument("TopkSelector::select: n = " + std::to_string(n) +
                                " exceeds the limit of 4294967295 (2^32 - 1) elements (indices "
                                "are uint32)");
  }
}

// Magnitudes to sample for (n, k < n, sample_ratio): max(ceil(n * ratio), ceil(64 n / k)), at
// most n. A sample of n / 2 or more saves nothing: use_exact_threshold() says so.
inline std::size_t sample_size(std::size_t n, std::size_t k, double sample_ratio) {
  const auto wanted =
      std::max(static_cast<std::size_t>(std::ceil(static_cast<double>(n) * sample_ratio)),
               (kSampleMinPerSelected * n + k - 1) / k);
  return std::min(n, wanted);
}

inline bool use_exact_threshold(std::size_t sample_size, std::size_t n) {
  return 2 * sample_size >= n;
}

// Whole blocks of kSampleBlock drawn for a sample of `size` magnitudes.
inline std::size_t sample_blocks(std::size_t size) {
  return (size + kSampleBlock - 1) / kSampleBlock;
}

// The sampled key whose rank (1 = largest) is the first threshold: 1.3 k s / n, within [1, s].
inline std::size_t first_rank(std::size_t sampled, std::size_t n, std::size_t k) {
  const double aim = kCandidateFactor * static_cast<double>(k) / static_cast<double>(n);
  return std::clamp<std::size_t>(
      static_cast<std::size_t>(std::ceil(static_cast<double>(sampled) * aim)), 1, sampled);
}

// After a threshold at `rank` passed only `count` < topk_min_count(k) elements: go further down
// the sample in proportion to the shortfall (at least twice as far).
inline std::size_t rescan_rank(std::size_t rank, std::size_t k, std::size_t count) {
  const double shortfall =
      static_cast<double>(k) / static_cast<double>(std::max<std::size_t>(count, 1));
  return std::max(2 * rank, static_cast<std::size_t>(std::ceil(static_cast<double>(rank) *
                                                               kCandidateFactor * shortfall)));
}

// A lower threshold than t > 0 (which selected too few): half the magnitude; inf and NaN keys go
// to the largest finite float first.
inline std::uint32_t halved(std::uint32_t t) {
  if (t >= kInfKey) return kInfKey - 1;
  return magnitude_key(key_magnitude(t) * 0.5f);
}

// The threshold key after a rescan: the sample's key at `rank` when it lies within the sample and
// is lower than the current `threshold`, otherwise half of it.
inline std::uint32_t lower_threshold(std::uint32_t threshold, bool rank_in_sample,
                                     std::uint32_t key_at_rank) {
  std::uint32_t lower = rank_in_sample ? key_at_rank : threshold;
  if (lower >= threshold) lower = halved(threshold);
  return lower;
}

}  // namespace gw::kernels::topk_rules
