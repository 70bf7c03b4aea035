#include "kernels/sparse.h"

#include <stdexcept>
#include <string>

#include "kernels/cpu/sparse_cpu.h"
#include "kernels/cuda/sparse_cuda.h"

namespace gw::kernels {

void magnitude_keys(const float* v, std::size_t n, std::uint32_t* keys, const Stream& stream) {
  if (stream.is_host()) return cpu::magnitude_keys(v, n, keys);
  cuda::magnitude_keys(v, n, keys, stream.native());
}

void sample_magnitude_keys(const float* v, std::size_t n, std::size_t blocks, std::uint64_t seed,
                           std::uint32_t* keys, const Stream& stream) {
  if (blocks > 0 && n < kSampleBlockFloats) {
    throw std::invalid_argument(
        "gw::kernels::sample_magnitude_keys: " + std::to_string(blocks) +
        " blocks asked for, but v holds no whole block of 16 (n = " + std::to_string(n) + ")");
  }
  if (stream.is_host()) return cpu::sample_magnitude_keys(v, n, blocks, seed, keys);
  cuda::sample_magnitude_keys(v, n, blocks, seed, keys, stream.native());
}

std::uint32_t kth_largest_key(const std::uint32_t* keys, std::size_t m, std::size_t k,
                              std::uint32_t* scratch, const Stream& stream) {
  if (k == 0 || k > m) {
    throw std::invalid_argument("gw::kernels::kth_largest_key: k = " + std::to_string(k) +
                                " is outside [1, m] for m = " + std::to_string(m) + " keys");
  }
  if (stream.is_host()) return cpu::kth_largest_key(keys, m, k, scratch);
  return cuda::kth_largest_key(keys, m, k, scratch, stream.native());
}

std::size_t count_at_least(const float* v, std::size_t n, std::uint32_t threshold_key,
                           const Stream& stream) {
  if (stream.is_host()) return cpu::count_at_least(v, n, threshold_key);
  return cuda::count_at_least(v, n, threshold_key, stream.native());
}

std::size_t select_at_least(const float* v, std::size_t n, std::uint32_t threshold_key,
                            std::uint32_t* indices, const Stream& stream) {
  if (stream.is_host()) return cpu::select_at_least(v, n, threshold_key, indices);
  return cuda::select_at_least(v, n, threshold_key, indices, stream.native());
}

std::uint32_t keep_top_k(const float* v, std::uint32_t* indices, std::size_t count, std::size_t k,
                         std::uint32_t* scratch, const Stream& stream) {
  if (k == 0 || k > count) {
    throw std::invalid_argument("gw::kernels::keep_top_k: k = " + std::to_string(k) +
                                " is outside [1, count] for count = " + std::to_string(count) +
                                " candidates");
  }
  if (stream.is_host()) return cpu::keep_top_k(v, indices, count, k, scratch);
  return cuda::keep_top_k(v, indices, count, k, scratch, stream.native());
}

std::uint32_t exact_topk_by_sort(const float* v, std::size_t n, std::size_t k,
                                 std::uint32_t* indices, std::uint32_t* scratch,
                                 const Stream& stream) {
  if (k == 0 || k > n || n > 0xFFFFFFFFu) {
    throw std::invalid_argument("gw::kernels::exact_topk_by_sort: k = " + std::to_string(k) +
                                " is outside [1, n] for n = " + std::to_string(n) +
                                " elements, or n is 2^32 or more");
  }
  if (stream.is_host()) return cpu::exact_topk_by_sort(v, n, k, indices, scratch);
  return cuda::exact_topk_by_sort(v, n, k, indices, scratch, stream.native());
}

void pack_pairs(const std::uint32_t* indices, std::size_t count, const float* v,
                std::uint32_t* words, const Stream& stream) {
  if (stream.is_host()) return cpu::pack_pairs(indices, count, v, words);
  cuda::pack_pairs(indices, count, v, words, stream.native());
}

void pair_indices(const std::uint32_t* pairs, std::size_t count, std::uint32_t* indices,
                  const Stream& stream) {
  if (stream.is_host()) return cpu::pair_indices(pairs, count, indices);
  cuda::pair_indices(pairs, count, indices, stream.native());
}

std::size_t sort_unique(std::uint32_t* indices, std::size_t count, const Stream& stream) {
  if (stream.is_host()) return cpu::sort_unique(indices, count);
  return cuda::sort_unique(indices, count, stream.native());
}

void zero_at(float* x, const std::uint32_t* indices, std::size_t count, const Stream& stream) {
  if (stream.is_host()) return cpu::zero_at(x, indices, count);
  cuda::zero_at(x, indices, count, stream.native());
}

void split_by_region(const std::uint32_t* indices, std::size_t count, std::uint32_t region,
                     std::size_t regions, std::uint32_t* relative, std::uint32_t* starts,
                     const Stream& stream) {
  if (region == 0) throw std::invalid_argument("gw::kernels::split_by_region: region is 0");
  if (stream.is_host())
    return cpu::split_by_region(indices, count, region, regions, relative, starts);
  cuda::split_by_region(indices, count, region, regions, relative, starts, stream.native());
}

PairsCheck check_sparse_pairs(const std::uint32_t* pairs, std::size_t count, std::size_t numel,
                              const Stream& stream) {
  if (stream.is_host()) return cpu::check_sparse_pairs(pairs, count, numel);
  return cuda::check_sparse_pairs(pairs, count, numel, stream.native());
}

void scatter_add_pairs(const std::uint32_t* pairs, std::size_t count, float* x,
                       const Stream& stream) {
  if (stream.is_host()) return cpu::scatter_add_pairs(pairs, count, x);
  cuda::scatter_add_pairs(pairs, count, x, stream.native());
}

}  // namespace gw::kernels
