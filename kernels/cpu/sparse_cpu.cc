#include "kernels/cpu/sparse_cpu.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "kernels/topk_rules.h"

namespace gw::kernels::cpu {

using topk_rules::magnitude_key;

void magnitude_keys(const float* v, std::size_t n, std::uint32_t* keys) {
  for (std::size_t i = 0; i < n; ++i) keys[i] = magnitude_key(v[i]);
}

// TopkSelector::draw_sample's loop: one SplitMix64 stream, a block per draw.
void sample_magnitude_keys(const float* v, std::size_t n, std::size_t blocks, std::uint64_t seed,
                           std::uint32_t* keys) {
  const std::uint64_t available = n / kSampleBlockFloats;
  std::uint64_t state = seed;
  for (std::size_t b = 0; b < blocks; ++b) {
    std::uint64_t z = (state += topk_rules::kSplitMixIncrement);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    const std::size_t block = static_cast<std::size_t>(((z >> 32) * available) >> 32);
    const float* src = v + block * kSampleBlockFloats;
    for (std::size_t j = 0; j < kSampleBlockFloats; ++j) {
      keys[b * kSampleBlockFloats + j] = magnitude_key(src[j]);
    }
  }
}

std::uint32_t kth_largest_key(const std::uint32_t* keys, std::size_t m, std::size_t k,
                              std::uint32_t* scratch) {
  std::copy(keys, keys + m, scratch);
  std::nth_element(scratch, scratch + (k - 1), scratch + m, std::greater<>());
  return scratch[k - 1];
}

std::size_t count_at_least(const float* v, std::size_t n, std::uint32_t threshold_key) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < n; ++i) count += magnitude_key(v[i]) >= threshold_key;
  return count;
}

std::size_t select_at_least(const float* v, std::size_t n, std::uint32_t threshold_key,
                            std::uint32_t* indices) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (magnitude_key(v[i]) >= threshold_key) indices[count++] = static_cast<std::uint32_t>(i);
  }
  return count;
}

// TopkSelector::keep_top: the k-th largest key, how many keys equal to it the top k holds, and a
// compaction that keeps index order, giving those ties to the lowest indices.
std::uint32_t keep_top_k(const float* v, std::uint32_t* indices, std::size_t count, std::size_t k,
                         std::uint32_t* scratch) {
  for (std::size_t j = 0; j < count; ++j) scratch[j] = magnitude_key(v[indices[j]]);
  std::nth_element(scratch, scratch + (k - 1), scratch + count, std::greater<>());
  const std::uint32_t kth = scratch[k - 1];
  const auto above = static_cast<std::size_t>(
      std::count_if(scratch, scratch + (k - 1), [kth](std::uint32_t key) { return key > kth; }));
  std::size_t ties = k - above, kept = 0;
  for (std::size_t j = 0; j < count; ++j) {
    const std::uint32_t key = magnitude_key(v[indices[j]]);
    if (key > kth || (key == kth && ties > 0)) {
      ties -= key == kth;
      indices[kept++] = indices[j];
    }
  }
  return kth;
}

// Every index sorted by key, descending: stable, so equal keys keep the ascending index order.
std::uint32_t exact_topk_by_sort(const float* v, std::size_t n, std::size_t k,
                                 std::uint32_t* indices, std::uint32_t* scratch) {
  for (std::size_t i = 0; i < n; ++i) {
    scratch[i] = magnitude_key(v[i]);
    indices[i] = static_cast<std::uint32_t>(i);
  }
  std::stable_sort(indices, indices + n,
                   [scratch](std::uint32_t a, std::uint32_t b) { return scratch[a] > scratch[b]; });
  const std::uint32_t kth = scratch[indices[k - 1]];
  std::sort(indices, indices + k);
  return kth;
}

// SparseMessageWriter::append's pairs.
void pack_pairs(const std::uint32_t* indices, std::size_t count, const float* v,
                std::uint32_t* words) {
  for (std::size_t j = 0; j < count; ++j) {
    words[2 * j] = indices[j];
    std::memcpy(&words[2 * j + 1], &v[indices[j]], sizeof(float));
  }
}

void pair_indices(const std::uint32_t* pairs, std::size_t count, std::uint32_t* indices) {
  for (std::size_t j = 0; j < count; ++j) indices[j] = pairs[2 * j];
}

std::size_t sort_unique(std::uint32_t* indices, std::size_t count) {
  std::sort(indices, indices + count);
  return static_cast<std::size_t>(std::unique(indices, indices + count) - indices);
}

void zero_at(float* x, const std::uint32_t* indices, std::size_t count) {
  for (std::size_t j = 0; j < count; ++j) x[indices[j]] = 0.0f;
}

void split_by_region(const std::uint32_t* indices, std::size_t count, std::uint32_t region,
                     std::size_t regions, std::uint32_t* relative, std::uint32_t* starts) {
  for (std::size_t r = 0; r <= regions; ++r) starts[r] = static_cast<std::uint32_t>(count);
  for (std::size_t j = 0; j < count; ++j) {
    const std::uint32_t range = indices[j] / region;
    relative[j] = indices[j] - range * region;
    // Ranges from just after the previous index's up to this one's start here.
    const std::uint32_t first = j == 0 ? 0 : indices[j - 1] / region + 1;
    for (std::uint32_t r = first; r <= range; ++r) starts[r] = static_cast<std::uint32_t>(j);
  }
}

PairsCheck check_sparse_pairs(const std::uint32_t* pairs, std::size_t count, std::size_t numel) {
  PairsCheck check;
  for (std::size_t j = 0; j < count; ++j) {
    const std::uint32_t index = pairs[2 * j];
    if (index >= numel) {
      check.problem = PairsProblem::kIndexOutOfRange;
    } else if (j > 0 && index <= pairs[2 * j - 2]) {
      check.problem = PairsProblem::kNotIncreasing;
      check.previous_index = pairs[2 * j - 2];
    } else {
      continue;
    }
    check.position = j;
    check.index = index;
    return check;
  }
  return check;
}

// accumulate_sparse_messages' inner loop.
void scatter_add_pairs(const std::uint32_t* pairs, std::size_t count, float* x) {
  for (std::size_t j = 0; j < count; ++j) {
    float value;
    std::memcpy(&value, &pairs[2 * j + 1], sizeof value);
    x[pairs[2 * j]] += value;
  }
}

}  // namespace gw::kernels::cpu
