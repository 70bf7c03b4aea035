// CUDA implementations of kernels/sparse.h (internal: call the Stream-taking API instead). Device
// memory of the stream's device; `stream` is its cudaStream_t as void*. Plain C++ declarations:
// defined in kernels/cuda/sparse.cu, which instantiates the Thrust algorithms of
// kernels/thrust/sparse_thrust.h on the stream, and in a build without CUDA by
// kernels/cuda/no_cuda.cc, where every one of them throws std::runtime_error.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/sparse.h"

namespace gw::kernels::cuda {

void magnitude_keys(const float* v, std::size_t n, std::uint32_t* keys, void* stream);
void sample_magnitude_keys(const float* v, std::size_t n, std::size_t blocks, std::uint64_t seed,
                           std::uint32_t* keys, void* stream);
std::uint32_t kth_largest_key(const std::uint32_t* keys, std::size_t m, std::size_t k,
                              std::uint32_t* scratch, void* stream);
std::size_t count_at_least(const float* v, std::size_t n, std::uint32_t threshold_key,
                           void* stream);
std::size_t select_at_least(const float* v, std::size_t n, std::uint32_t threshold_key,
                            std::uint32_t* indices, void* stream);
std::uint32_t keep_top_k(const float* v, std::uint32_t* indices, std::size_t count, std::size_t k,
                         std::uint32_t* scratch, void* stream);
std::uint32_t exact_topk_by_sort(const float* v, std::size_t n, std::size_t k,
                                 std::uint32_t* indices, std::uint32_t* scratch, void* stream);
void pack_pairs(const std::uint32_t* indices, std::size_t count, const float* v,
                std::uint32_t* words, void* stream);
void zero_at(float* x, const std::uint32_t* indices, std::size_t count, void* stream);
void split_by_region(const std::uint32_t* indices, std::size_t count, std::uint32_t region,
                     std::size_t regions, std::uint32_t* relative, std::uint32_t* starts,
                     void* stream);
PairsCheck check_sparse_pairs(const std::uint32_t* pairs, std::size_t count, std::size_t numel,
                              void* stream);
void scatter_add_pairs(const std::uint32_t* pairs, std::size_t count, float* x, void* stream);
void pair_indices(const std::uint32_t* pairs, std::size_t count, std::uint32_t* indices,
                  void* stream);
std::size_t sort_unique(std::uint32_t* indices, std::size_t count, void* stream);

}  // namespace gw::kernels::cuda
