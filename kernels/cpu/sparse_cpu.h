// CPU implementations of kernels/sparse.h (internal: call the Stream-taking API instead). Host
// memory; arguments already checked by the API; semantics exactly those documented there.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/sparse.h"

namespace gw::kernels::cpu {

void magnitude_keys(const float* v, std::size_t n, std::uint32_t* keys);
void sample_magnitude_keys(const float* v, std::size_t n, std::size_t blocks, std::uint64_t seed,
                           std::uint32_t* keys);
std::uint32_t kth_largest_key(const std::uint32_t* keys, std::size_t m, std::size_t k,
                              std::uint32_t* scratch);
std::size_t count_at_least(const float* v, std::size_t n, std::uint32_t threshold_key);
std::size_t select_at_least(const float* v, std::size_t n, std::uint32_t threshold_key,
                            std::uint32_t* indices);
std::uint32_t keep_top_k(const float* v, std::uint32_t* indices, std::size_t count, std::size_t k,
                         std::uint32_t* scratch);
std::uint32_t exact_topk_by_sort(const float* v, std::size_t n, std::size_t k,
                                 std::uint32_t* indices, std::uint32_t* scratch);
void pack_pairs(const std::uint32_t* indices, std::size_t count, const float* v,
                std::uint32_t* words);
void zero_at(float* x, const std::uint32_t* indices, std::size_t count);
void split_by_region(const std::uint32_t* indices, std::size_t count, std::uint32_t region,
                     std::size_t regions, std::uint32_t* relative, std::uint32_t* starts);
PairsCheck check_sparse_pairs(const std::uint32_t* pairs, std::size_t count, std::size_t numel);
void scatter_add_pairs(const std::uint32_t* pairs, std::size_t count, float* x);
void pair_indices(const std::uint32_t* pairs, std::size_t count, std::uint32_t* indices);
std::size_t sort_unique(std::uint32_t* indices, std::size_t count);

}  // namespace gw::kernels::cpu
