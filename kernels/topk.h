// Top-k selection by magnitude, the sparsifying step of Deep Gradient Compression (DGC).
//
// On the host, or on a CUDA stream (the device selector of kernels/thrust/topk_thrust.h, which
// selects exactly the host's indices: Note [Device top-k]).
//
// DGC's sampled threshold, made exact where it matters: a threshold estimated from a small random
// sample of magnitudes picks ~1.3k candidates in one streaming pass, and an exact selection among
// those candidates (or, rarely, a rescan or an exact fallback) keeps the result a true top set.
// See Note [Sampled top-k] in kernels/cpu/topk_select.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/stream.h"

namespace gw::kernels {

// The selected count may fall short of k by at most this fraction: it lies in
// [topk_min_count(k), k]. Selecting exactly k would cost a second pass whenever the sampled
// threshold lands a little high; DGC only needs "about k".
inline constexpr double kTopkCountTolerance = 0.05;

// ceil(k * (1 - kTopkCountTolerance)), computed exactly in integers: k itself for k < 20, 0 for
// k == 0.
std::size_t topk_min_count(std::size_t k);

// What the last select() did, for tests, benchmarks and logs.
struct TopkStats {
  // Every selected |v[i]| is >= threshold and every unselected one is <= threshold (+inf when
  // nothing was selected, 0 when everything was).
  float threshold = 0.0f;
  std::size_t sample_size = 0;  // magnitudes the threshold was estimated from (n: exact path)
  int rescans = 0;              // extra passes after a threshold that selected too few
  bool exact_fallback = false;  // the threshold still selected too few after 2 rescans
  std::size_t candidates = 0;  // elements the last scan collected, those cut from a full buffer too
};

// A reusable workspace: select() allocates nothing once its buffers have grown to the sizes it
// has seen (they never shrink). Not thread-safe: use one selector per thread.
class TopkSelector {
 public:
  // Writes to out, and returns the number of, indices i of v[0..n) with the largest |v[i]|.
  // - k < n: the count lies in [topk_min_count(k), k]; k >= n: all n indices, 0..n-1.
  //   out must have room for min(k, n) indices; nothing past the returned count is written.
  // - Every selected index is among the exact top-count by magnitude: no unselected |v[j]| is
  //   larger than a selected one. Ties at the threshold go to the lower indices.
  // - NaN counts as larger than any number, +inf included, so a NaN is always selected (sent,
  //   never hidden in the residual) as long as the count allows.
  // - Output order: ascending indices, on the host and on a CUDA stream (a receiver refuses a
  //   sparse message in any other order: check_sparse_pairs, kernels/sparse.h).
  // - Deterministic: the same (v, n, k, sample_ratio, seed) gives the same output.
  // - sample_ratio in (0, 1]: the fraction of v sampled to estimate the threshold (DGC: 0.001 to
  //   0.01); at least 64 n / k are sampled. Where that is n / 2 or more (always for k < 128),
  //   the threshold is exact instead, from a copy of all n magnitudes.
  // Throws std::invalid_argument for a sample_ratio outside (0, 1] (NaN included) or n above
  // 2^32 - 1 (indices are uint32), before reading v.
  std::size_t select(const float* v, std::size_t n, std::size_t k, double sample_ratio,
                     std::uint64_t seed, std::uint32_t* out);

  // select() where `stream` works: the host stream runs the overload above; a CUDA stream runs
  // the device selector on v and out in that device's memory, with the same count and the same
  // indices, ascending (Note [Device top-k]), and synchronises (the count comes back). Its device
  // workspace, three arrays of n uint32, is kept for later calls. last_stats() describes it too,
  // except `candidates` (see the Note).
  std::size_t select(const float* v, std::size_t n, std::size_t k, double sample_ratio,
                     std::uint64_t seed, std::uint32_t* out, const Stream& stream);

  const TopkStats& last_stats() const { return stats_; }

 private:
  // One candidate of a scan: its index and its magnitude key (the float's bits without the sign,
  // so that integer order is magnitude order with NaN above +inf).
  struct Candidate {
    std::uint32_t index;
    std::uint32_t key;
  };

  std::uint32_t exact_kth_key(const float* v, std::size_t n, std::size_t k);
  std::size_t draw_sample(const float* v, std::size_t n, std::size_t size, std::uint64_t seed);
  std::uint32_t sample_key_at_rank(std::size_t rank);
  std::size_t scan(const float* v, std::size_t n, std::size_t k, std::size_t capacity,
                   std::uint32_t threshold);
  void keep_top(std::size_t k);

  std::vector<std::uint32_t> sample_;      // sampled magnitude keys
  std::vector<Candidate> candidates_;      // a scan's candidates, in index order
  std::vector<std::uint32_t> keys_;        // candidate keys, to select the k-th from
  std::vector<std::uint32_t> histogram_;   // bucketed selection: counts per top-bits bucket
  std::vector<std::uint32_t> bucket_;      // bucketed selection: the keys of one bucket
  std::vector<std::uint32_t> exact_keys_;  // all n keys, exact path only
  std::size_t sample_used_ = 0;            // keys in sample_ from the current call
  std::size_t count_ = 0;                  // candidates_ in use
  std::uint32_t threshold_key_ = 0;        // selected keys are >= it, unselected ones <= it
  TopkStats stats_;
  // The device selector's workspace (thrust_algo::TopkWorkspace), on the last CUDA stream's device.
  Buffer<std::uint32_t> device_keys_, device_scratch_, device_candidates_;
};

}  // namespace gw::kernels
