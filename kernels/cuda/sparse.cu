// kernels/sparse.h on a CUDA stream: the Thrust algorithms of kernels/thrust/sparse_thrust.h
// instantiated on it (Note [One algorithm source]). Nothing else belongs here.
#include "kernels/cuda/sparse_cuda.h"
#include "kernels/thrust/cuda_policy.h"
#include "kernels/thrust/sparse_thrust.h"

namespace gw::kernels::cuda {

void magnitude_keys(const float* v, std::size_t n, std::uint32_t* keys, void* stream) {
  thrust_algo::magnitude_keys(on_stream(stream), v, n, keys);
}

void sample_magnitude_keys(const float* v, std::size_t n, std::size_t blocks, std::uint64_t seed,
                           std::uint32_t* keys, void* stream) {
  thrust_algo::sample_magnitude_keys(on_stream(stream), v, n, blocks, seed, keys);
}

std::uint32_t kth_largest_key(const std::uint32_t* keys, std::size_t m, std::size_t k,
                              std::uint32_t* scratch, void* stream) {
  return thrust_algo::kth_largest_key(on_stream_synced(stream), keys, m, k, scratch);
}

std::size_t count_at_least(const float* v, std::size_t n, std::uint32_t threshold_key,
                           void* stream) {
  return thrust_algo::count_at_least(on_stream_synced(stream), v, n, threshold_key);
}

std::size_t select_at_least(const float* v, std::size_t n, std::uint32_t threshold_key,
                            std::uint32_t* indices, void* stream) {
  return thrust_algo::select_at_least(on_stream_synced(stream), v, n, threshold_key, indices);
}

std::uint32_t keep_top_k(const float* v, std::uint32_t* indices, std::size_t count, std::size_t k,
                         std::uint32_t* scratch, void* stream) {
  return thrust_algo::keep_top_k(on_stream_synced(stream), v, indices, count, k, scratch);
}

std::uint32_t exact_topk_by_sort(const float* v, std::size_t n, std::size_t k,
                                 std::uint32_t* indices, std::uint32_t* scratch, void* stream) {
  return thrust_algo::exact_topk_by_sort(on_stream_synced(stream), v, n, k, indices, scratch);
}

void pack_pairs(const std::uint32_t* indices, std::size_t count, const float* v,
                std::uint32_t* words, void* stream) {
  thrust_algo::pack_pairs(on_stream(stream), indices, count, v, words);
}

void pair_indices(const std::uint32_t* pairs, std::size_t count, std::uint32_t* indices,
                  void* stream) {
  thrust_algo::pair_indices(on_stream(stream), pairs, count, indices);
}

std::size_t sort_unique(std::uint32_t* indices, std::size_t count, void* stream) {
  return thrust_algo::sort_unique(on_stream_synced(stream), indices, count);
}

void zero_at(float* x, const std::uint32_t* indices, std::size_t count, void* stream) {
  thrust_algo::zero_at(on_stream(stream), x, indices, count);
}

void split_by_region(const std::uint32_t* indices, std::size_t count, std::uint32_t region,
                     std::size_t regions, std::uint32_t* relative, std::uint32_t* starts,
                     void* stream) {
  thrust_algo::split_by_region(on_stream(stream), indices, count, region, regions, relative,
                               starts);
}

PairsCheck check_sparse_pairs(const std::uint32_t* pairs, std::size_t count, std::size_t numel,
                              void* stream) {
  return thrust_algo::check_sparse_pairs(on_stream_synced(stream), pairs, count, numel);
}

void scatter_add_pairs(const std::uint32_t* pairs, std::size_t count, float* x, void* stream) {
  thrust_algo::scatter_add_pairs(on_stream(stream), pairs, count, x);
}

}  // namespace gw::kernels::cuda
