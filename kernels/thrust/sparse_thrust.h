// The device algorithms of kernels/sparse.h and kernels/update.h, written once with Thrust as
// templates over the execution policy. Internal to kernels/: kernels/cuda/*.cu instantiate them
// on a CUDA stream; tests/kernels/thrust_omp_test.cc instantiates them under Thrust's OpenMP
// system and checks them against the CPU implementation (kernels/cpu).
//
// Note [One algorithm source]
// A CUDA primitive can only be run where there is a GPU, and most machines that build and test
// gradwire have none. So the device algorithms are not written as CUDA kernels but as Thrust
// calls (CUB only where Thrust lacks a piece), in templates over the execution policy, with
// per-element work in GW_HOST_DEVICE functors (never lambdas: a host lambda cannot run on the
// device, and __device__ lambdas need nvcc's extended-lambda mode, which g++ cannot read):
//  - kernels/cuda/*.cu instantiates them with thrust::cuda::par_nosync.on(stream), or
//    thrust::cuda::par.on(stream) where a result comes back to the host (a count, a key, a norm):
//    that is the thin, GPU-only part (stream plumbing), checked by kernels_cuda_test on a GPU.
//  - tests/kernels/thrust_omp_test.cc compiles the same headers with g++ -fopenmp and
//    thrust::omp::par, and checks every algorithm against the CPU implementation, bit for bit, on
//    random inputs of many sizes and distributions, and the composed device top-k selector
//    (kernels/thrust/topk_thrust.h) against the host TopkSelector, index for index. A mistake in
//    an algorithm (an off-by-one, a wrong order of float operations, an unstable compaction) fails
//    there, on any machine; only a mistake in the stream plumbing needs a GPU to show. One kind
//    of mistake hides under OpenMP too: Thrust's OpenMP sorts are stable whatever they are called,
//    so where an algorithm relies on stability it must say stable_sort (keep_top_k does).
// The float arithmetic is written so that the order of operations is the CPU loops' own, with
// each multiply and add rounded separately (kernels/thrust/float_ops.h). Memory is raw pointers
// the caller owns (kernels::Buffer): no thrust::device_vector, whose constructors and resizes run
// on CUDA's legacy default stream, which gradwire never uses (Note [Streams]). Thrust allocates
// the temporary storage of its sorts, scans and reductions itself.
// Values come back to the host through Thrust algorithms that return them (count_if, reduce,
// find_if): each of those waits for the policy's stream, and is the only kind of wait here.
#pragma once

#include <thrust/copy.h>
#include <thrust/count.h>
#include <thrust/fill.h>
#include <thrust/find.h>
#include <thrust/for_each.h>
#include <thrust/functional.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/reduce.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>
#include <thrust/transform.h>
#include <thrust/unique.h>

#include <cstddef>
#include <cstdint>

#include "kernels/host_device.h"
#include "kernels/sparse.h"
#include "kernels/thrust/float_ops.h"

namespace gw::kernels::thrust_algo {

using Index = std::uint32_t;
using Key = std::uint32_t;

// Reads one key back to the host, in the policy's order: a one-element reduction (max(0, key) is
// key), which is how Thrust hands a value to the host and waits for it.
template <class Policy>
Key read_key(const Policy& policy, const Key* p) {
  return thrust::reduce(policy, p, p + 1, Key{0}, thrust::maximum<Key>());
}

// --- Magnitude keys -----------------------------------------------------------------------------

struct MagnitudeKeyOp {
  GW_HOST_DEVICE Key operator()(float x) const { return magnitude_key(x); }
};

// Key of sample element j: block j / 16 of the sample is whole block `draw` of v, where draw is
// the top 32 bits of the (j / 16)-th SplitMix64 draw scaled to [0, available).
struct SampleKeyOp {
  const float* v;
  std::uint64_t seed;
  std::uint64_t available;  // whole sample blocks in v
  GW_HOST_DEVICE Key operator()(std::size_t j) const {
    const std::size_t b = j / kSampleBlockFloats;
    const std::uint64_t block = ((splitmix64_draw(seed, b) >> 32) * available) >> 32;
    return magnitude_key(v[block * kSampleBlockFloats + j % kSampleBlockFloats]);
  }
};

struct KeyAtLeastOp {
  Key threshold;
  GW_HOST_DEVICE bool operator()(float x) const { return magnitude_key(x) >= threshold; }
};

struct KeyAtOp {
  const float* v;
  GW_HOST_DEVICE Key operator()(Index i) const { return magnitude_key(v[i]); }
};

template <class Policy>
void magnitude_keys(const Policy& policy, const float* v, std::size_t n, Key* keys) {
  if (n == 0) return;
  thrust::transform(policy, v, v + n, keys, MagnitudeKeyOp{});
}

template <class Policy>
void sample_magnitude_keys(const Policy& policy, const float* v, std::size_t n, std::size_t blocks,
                           std::uint64_t seed, Key* keys) {
  if (blocks == 0) return;
  const thrust::counting_iterator<std::size_t> first(0);
  thrust::transform(policy, first, first + blocks * kSampleBlockFloats, keys,
                    SampleKeyOp{v, seed, n / kSampleBlockFloats});
}

// Sorts a copy of keys[0..m) descending into scratch and reads its (k - 1)-th element.
template <class Policy>
Key kth_largest_key(const Policy& policy, const Key* keys, std::size_t m, std::size_t k,
                    Key* scratch) {
  thrust::copy(policy, keys, keys + m, scratch);
  thrust::sort(policy, scratch, scratch + m, thrust::greater<Key>());
  return read_key(policy, scratch + (k - 1));
}

// --- Selection ----------------------------------------------------------------------------------

template <class Policy>
std::size_t count_at_least(const Policy& policy, const float* v, std::size_t n, Key threshold) {
  if (n == 0) return 0;
  return static_cast<std::size_t>(thrust::count_if(policy, v, v + n, KeyAtLeastOp{threshold}));
}

// copy_if is stable: the indices come out ascending.
template <class Policy>
std::size_t select_at_least(const Policy& policy, const float* v, std::size_t n, Key threshold,
                            Index* indices) {
  if (n == 0) return 0;
  const thrust::counting_iterator<Index> first(0);
  Index* end = thrust::copy_if(policy, first, first + n, v, indices, KeyAtLeastOp{threshold});
  return static_cast<std::size_t>(end - indices);
}

// The k of indices[0..count) (ascending) with the largest keys, ties to the lower index: a stable
// sort by key, descending, keeps the candidates' index order among equal keys, so its first k are
// exactly that set; they are sorted back into index order. Returns the k-th largest key.
template <class Policy>
Key keep_top_k(const Policy& policy, const float* v, Index* indices, std::size_t count,
               std::size_t k, Key* scratch) {
  thrust::transform(policy, indices, indices + count, scratch, KeyAtOp{v});
  thrust::stable_sort_by_key(policy, scratch, scratch + count, indices, thrust::greater<Key>());
  const Key kth = read_key(policy, scratch + (k - 1));
  thrust::sort(policy, indices, indices + k);
  return kth;
}

// Every index sorted by key, descending (kernels/sparse.h): the keys into scratch, the indices
// 0..n-1 beside them, a stable sort by key keeps equal keys in index order; the first k are sorted
// back into index order.
template <class Policy>
Key exact_topk_by_sort(const Policy& policy, const float* v, std::size_t n, std::size_t k,
                       Index* indices, Key* scratch) {
  thrust::transform(policy, v, v + n, scratch, MagnitudeKeyOp{});
  thrust::sequence(policy, indices, indices + n, Index{0});
  thrust::stable_sort_by_key(policy, scratch, scratch + n, indices, thrust::greater<Key>());
  const Key kth = read_key(policy, scratch + (k - 1));
  thrust::sort(policy, indices, indices + k);
  return kth;
}

// --- Messages -----------------------------------------------------------------------------------

struct PackPairOp {
  const Index* indices;
  const float* v;
  std::uint32_t* words;
  GW_HOST_DEVICE void operator()(std::size_t j) const {
    const Index i = indices[j];
    words[2 * j] = i;
    words[2 * j + 1] = float_bits(v[i]);
  }
};

struct ZeroAtOp {
  float* x;
  GW_HOST_DEVICE void operator()(Index i) const { x[i] = 0.0f; }
};

// split_by_region for index j: the ranges from just after index j - 1's up to index j's start at
// j (each range is written by exactly one j, so there is no race), and j's index within its range.
struct SplitByRegionOp {
  const Index* indices;
  std::uint32_t region;
  Index* relative;
  Index* starts;
  GW_HOST_DEVICE void operator()(std::size_t j) const {
    const std::uint32_t range = indices[j] / region;
    relative[j] = indices[j] - range * region;
    const std::uint32_t first = j == 0 ? 0 : indices[j - 1] / region + 1;
    for (std::uint32_t r = first; r <= range; ++r) starts[r] = static_cast<Index>(j);
  }
};

// Pair j is bad when its index is outside [0, numel) or not above the previous pair's.
struct BadPairOp {
  const std::uint32_t* pairs;
  std::size_t numel;
  GW_HOST_DEVICE bool operator()(std::size_t j) const {
    const std::uint32_t index = pairs[2 * j];
    return index >= numel || (j > 0 && index <= pairs[2 * j - 2]);
  }
};

// x[index] += value for each pair: indices are unique (checked first), so no two threads touch
// one element and no atomics are needed; each element gets one rounded add, as on the host.
struct ScatterAddPairOp {
  const std::uint32_t* pairs;
  float* x;
  GW_HOST_DEVICE void operator()(std::size_t j) const {
    float& xi = x[pairs[2 * j]];
    xi = add_rn(xi, bits_float(pairs[2 * j + 1]));
  }
};

template <class Policy>
void pack_pairs(const Policy& policy, const Index* indices, std::size_t count, const float* v,
                std::uint32_t* words) {
  if (count == 0) return;
  const thrust::counting_iterator<std::size_t> first(0);
  thrust::for_each(policy, first, first + count, PackPairOp{indices, v, words});
}

template <class Policy>
void zero_at(const Policy& policy, float* x, const Index* indices, std::size_t count) {
  if (count == 0) return;
  thrust::for_each(policy, indices, indices + count, ZeroAtOp{x});
}

template <class Policy>
void split_by_region(const Policy& policy, const Index* indices, std::size_t count,
                     std::uint32_t region, std::size_t regions, Index* relative, Index* starts) {
  thrust::fill(policy, starts, starts + regions + 1, static_cast<Index>(count));
  if (count == 0) return;
  const thrust::counting_iterator<std::size_t> first(0);
  thrust::for_each(policy, first, first + count,
                   SplitByRegionOp{indices, region, relative, starts});
}

template <class Policy>
PairsCheck check_sparse_pairs(const Policy& policy, const std::uint32_t* pairs, std::size_t count,
                              std::size_t numel) {
  PairsCheck check;
  if (count == 0) return check;
  const thrust::counting_iterator<std::size_t> first(0);
  const auto bad = thrust::find_if(policy, first, first + count, BadPairOp{pairs, numel});
  const auto j = static_cast<std::size_t>(bad - first);
  if (j == count) return check;
  check.position = j;
  check.index = read_key(policy, pairs + 2 * j);
  if (check.index >= numel) {
    check.problem = PairsProblem::kIndexOutOfRange;
  } else {
    check.problem = PairsProblem::kNotIncreasing;
    check.previous_index = read_key(policy, pairs + 2 * j - 2);
  }
  return check;
}

struct PairIndexOp {
  const std::uint32_t* pairs;
  GW_HOST_DEVICE Index operator()(std::size_t j) const { return pairs[2 * j]; }
};

template <class Policy>
void pair_indices(const Policy& policy, const std::uint32_t* pairs, std::size_t count,
                  Index* indices) {
  if (count == 0) return;
  const thrust::counting_iterator<std::size_t> first(0);
  thrust::transform(policy, first, first + count, indices, PairIndexOp{pairs});
}

// The distinct count comes back through thrust::unique's end, which waits for the policy's stream.
template <class Policy>
std::size_t sort_unique(const Policy& policy, Index* indices, std::size_t count) {
  if (count == 0) return 0;
  thrust::sort(policy, indices, indices + count);
  return static_cast<std::size_t>(thrust::unique(policy, indices, indices + count) - indices);
}

template <class Policy>
void scatter_add_pairs(const Policy& policy, const std::uint32_t* pairs, std::size_t count,
                       float* x) {
  if (count == 0) return;
  const thrust::counting_iterator<std::size_t> first(0);
  thrust::for_each(policy, first, first + count, ScatterAddPairOp{pairs, x});
}

}  // namespace gw::kernels::thrust_algo
