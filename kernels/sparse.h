// Selection and sparse-message primitives of the sparsifying compressors (DGC, top-k): magnitude
// keys and the sampled threshold, selection by threshold, exact top-k among candidates, the
// (index, value) pairs of a sparse message, their validation and their scatter-add.
//
// Each primitive runs on the Stream given last (Note [Streams]): the host (kernels/cpu, plain
// loops with exactly the arithmetic of the host compressors) or a CUDA stream (kernels/cuda, the
// Thrust algorithms of kernels/thrust/sparse_thrust.h: See Note [One algorithm source]). Pointers
// are memory where the stream works (host memory for the host, device memory for CUDA). Results
// are bit-identical on both. A primitive that returns a value to the host synchronises a CUDA
// stream, and says so. Count 0 and n == 0 are valid everywhere and touch no memory. On a CUDA
// stream in a build without CUDA every primitive throws std::runtime_error.
//
// Magnitudes are compared as keys: a float's bits without the sign (magnitude order, NaN above
// +inf; Note [Sampled top-k] in kernels/cpu/topk_select.cc). Indices are uint32.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/stream.h"

namespace gw::kernels {

// Floats per sampled block: a sample is whole blocks of 16 consecutive floats at multiples of 16.
inline constexpr std::size_t kSampleBlockFloats = 16;

// keys[i] = magnitude key of v[i], i < n.
void magnitude_keys(const float* v, std::size_t n, std::uint32_t* keys, const Stream& stream);

// The sample TopkSelector draws: `blocks` blocks of kSampleBlockFloats keys, block b copied from
// the whole block of v chosen by the b-th draw of SplitMix64(seed), uniform over the n / 16 whole
// blocks of v (with replacement). Writes blocks * 16 keys. Throws std::invalid_argument when
// blocks > 0 and v holds no whole block (n < 16).
void sample_magnitude_keys(const float* v, std::size_t n, std::size_t blocks, std::uint64_t seed,
                           std::uint32_t* keys, const Stream& stream);

// The k-th largest of keys[0..m), 1 <= k <= m (std::invalid_argument otherwise). scratch has room
// for m keys; keys is left as it is. Synchronises.
std::uint32_t kth_largest_key(const std::uint32_t* keys, std::size_t m, std::size_t k,
                              std::uint32_t* scratch, const Stream& stream);

// How many v[i], i < n, have a magnitude key >= threshold_key. Synchronises.
std::size_t count_at_least(const float* v, std::size_t n, std::uint32_t threshold_key,
                           const Stream& stream);

// Writes the indices i < n with magnitude key >= threshold_key to `indices`, ascending, and
// returns their count (count_at_least's; `indices` needs room for it). Synchronises.
std::size_t select_at_least(const float* v, std::size_t n, std::uint32_t threshold_key,
                            std::uint32_t* indices, const Stream& stream);

// Keeps, in indices[0..k), the k of the ascending candidates indices[0..count) whose elements of
// v have the largest magnitude keys, ties to the lower index, in ascending order (what
// TopkSelector keeps of a scan's candidates). 1 <= k <= count (std::invalid_argument otherwise);
// scratch has room for count keys; indices[k..count) are left unspecified. Returns the k-th
// largest key. Synchronises.
std::uint32_t keep_top_k(const float* v, std::uint32_t* indices, std::size_t count, std::size_t k,
                         std::uint32_t* scratch, const Stream& stream);

// The exact top-k by magnitude by sorting all n keys: the reference that benchmarks and tests
// hold TopkSelector against, not a path of the step (it sorts everything where the selector
// scans once). Writes to indices[0..k) the k indices i < n whose elements of v have the largest
// magnitude keys, ties to the lower index, in ascending order, and returns the k-th largest key.
// 1 <= k <= n < 2^32 (std::invalid_argument otherwise); indices and scratch have room for n
// (both are overwritten; indices[k..n) are left unspecified). On the host a std::stable_sort, on a
// CUDA stream a Thrust stable sort by key (a radix sort). Synchronises.
std::uint32_t exact_topk_by_sort(const float* v, std::size_t n, std::size_t k,
                                 std::uint32_t* indices, std::uint32_t* scratch,
                                 const Stream& stream);

// The pairs of a sparse message: words[2j] = indices[j], words[2j + 1] = the bits of
// v[indices[j]], j < count.
void pack_pairs(const std::uint32_t* indices, std::size_t count, const float* v,
                std::uint32_t* words, const Stream& stream);

// x[indices[j]] = 0, j < count (error feedback after a send; DGC's momentum masking).
void zero_at(float* x, const std::uint32_t* indices, std::size_t count, const Stream& stream);

// What check_sparse_pairs found wrong with a received segment.
enum class PairsProblem {
  kNone,
  kIndexOutOfRange,  // pair `position` has index >= numel
  kNotIncreasing,    // pair `position` has an index <= the previous pair's (a repeat included)
};

struct PairsCheck {
  PairsProblem problem = PairsProblem::kNone;
  std::size_t position = 0;          // the first bad pair
  std::uint32_t index = 0;           // its index
  std::uint32_t previous_index = 0;  // the index of pair position - 1 (kNotIncreasing)
  bool ok() const { return problem == PairsProblem::kNone; }
};

// Checks the `count` pairs (index, value bits) at pairs[0..2 count) of one rank's segment for one
// tensor of numel elements: every index < numel and strictly increasing, so no index repeats.
// Returns the first bad pair (or kNone); the caller names the rank in its error. Selectors
// send ascending indices, so a segment in any other order is malformed. Synchronises.
PairsCheck check_sparse_pairs(const std::uint32_t* pairs, std::size_t count, std::size_t numel,
                              const Stream& stream);

// Splits `count` ascending indices of a tensor among `regions` consecutive index ranges of
// `region` elements each (range r is [r region, (r + 1) region); every index below regions x
// region): relative[j] = indices[j] - region x (its range), and starts[r], r <= regions, is the
// first j whose index lies in range r or a later one (starts[regions] = count), so range r's
// indices are relative[starts[r] .. starts[r + 1]). relative and starts (regions + 1 entries) are
// in the stream's memory; region >= 1. The sparse allreduce's split sends each rank its range.
void split_by_region(const std::uint32_t* indices, std::size_t count, std::uint32_t region,
                     std::size_t regions, std::uint32_t* relative, std::uint32_t* starts,
                     const Stream& stream);

// indices[j] = pairs[2j], j < count: the indices of a segment's (index, value) pairs.
void pair_indices(const std::uint32_t* pairs, std::size_t count, std::uint32_t* indices,
                  const Stream& stream);

// Sorts indices[0..count) ascending and removes repeats; returns how many distinct indices are
// left at the front (the rest are unspecified). The merge of several ranks' pairs into one
// candidate set (Note [Sparse allreduce over two levels]). Synchronises.
std::size_t sort_unique(std::uint32_t* indices, std::size_t count, const Stream& stream);

// x[index] += value for each of the `count` pairs of one checked segment (check_sparse_pairs: a
// repeated index would be a race on a device). Call once per rank's segment, in rank order: every
// element then gets the same adds in the same order on every device and every rank, so the sums
// are bit-identical (no float atomics).
void scatter_add_pairs(const std::uint32_t* pairs, std::size_t count, float* x,
                       const Stream& stream);

}  // namespace gw::kernels
