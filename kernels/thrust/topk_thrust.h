// The device top-k selector: TopkSelector::select's decisions (kernels/topk_rules.h) composed from
// the Thrust algorithms of kernels/thrust/sparse_thrust.h, so that on the same input it selects
// exactly the host selector's indices (See Note [Device top-k]). Internal to kernels/;
// instantiated on a CUDA stream by kernels/cuda/topk.cu and under OpenMP by the tests
// (See Note [One algorithm source]).
//
// Note [Device top-k]
// The host scan (Note [Sampled top-k]) cuts its candidate buffer to its top k whenever it fills;
// on a device the passing elements are simply counted, and compacted once. Both give the same
// indices. Let S(t) be the elements whose key passes the threshold t:
//  - When no cut happens, the host's count is |S(t)|. A cut happens only once at least
//    capacity >= k candidates are held, and leaves at least k, so "count < topk_min_count(k)",
//    the only thing the rescans look at, is true exactly when |S(t)| < topk_min_count(k), and then
//    the count it uses for the next rank is |S(t)| itself. So both try the same thresholds.
//  - A cut keeps the prefix's top k by (key descending, index ascending) and then admits only keys
//    strictly above the k-th kept one. Every element of S(t)'s top k in that order survives it (a
//    later element with a key equal to the k-th kept one ranks below all k kept ones), so the
//    host's final keep_top leaves S(t)'s top k, what the device computes from all of S(t).
// The device counts S(t) with one reduction per threshold (each a wait for the stream: the next
// decision needs the count), sorts the sample once and reads its keys at the ranks the rules ask
// for, and compacts S(t) once, into a buffer of n indices. TopkStats are the host's, except
// `candidates`: |S(t)| of the final threshold (the host counts what its scan collected, cuts
// included).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include "kernels/thrust/sparse_thrust.h"
#include "kernels/topk.h"
#include "kernels/topk_rules.h"

namespace gw::kernels::thrust_algo {

// Device memory of the selector: three arrays of n elements each.
struct TopkWorkspace {
  Key* keys;          // magnitude keys: the sample, or all n (exact threshold)
  Key* scratch;       // a sorted copy of keys; the candidates' keys in keep_top_k
  Index* candidates;  // S(t), ascending
};

// TopkSelector::select on the policy's device: same arguments (checked by the caller), same
// result in out[0..count), ascending.
template <class Policy>
std::size_t select_topk(const Policy& policy, const float* v, std::size_t n, std::size_t k,
                        double sample_ratio, std::uint64_t seed, Index* out,
                        const TopkWorkspace& ws, TopkStats& stats) {
  stats = TopkStats{};
  if (k == 0) {
    stats.threshold = std::numeric_limits<float>::infinity();
    return 0;
  }
  if (k >= n) {
    thrust::sequence(policy, out, out + n, Index{0});
    stats.candidates = n;
    return n;
  }
  const std::size_t min_count = topk_min_count(k);
  const std::size_t sample_size = topk_rules::sample_size(n, k, sample_ratio);
  Key threshold;
  std::size_t count;
  if (topk_rules::use_exact_threshold(sample_size, n)) {
    stats.sample_size = n;
    magnitude_keys(policy, v, n, ws.keys);
    threshold = kth_largest_key(policy, ws.keys, n, k, ws.scratch);
    count = count_at_least(policy, v, n, threshold);
  } else {
    const std::size_t blocks = topk_rules::sample_blocks(sample_size);
    const std::size_t sampled = blocks * topk_rules::kSampleBlock;
    stats.sample_size = sampled;
    sample_magnitude_keys(policy, v, n, blocks, seed, ws.keys);
    // Sorted once; the key at rank r (1 = largest) is then sorted[r - 1].
    thrust::copy(policy, ws.keys, ws.keys + sampled, ws.scratch);
    thrust::sort(policy, ws.scratch, ws.scratch + sampled, thrust::greater<Key>());
    std::size_t rank = topk_rules::first_rank(sampled, n, k);
    threshold = read_key(policy, ws.scratch + (rank - 1));
    for (count = count_at_least(policy, v, n, threshold); count < min_count;
         count = count_at_least(policy, v, n, threshold)) {
      if (stats.rescans == topk_rules::kMaxRescans) {
        stats.exact_fallback = true;
        magnitude_keys(policy, v, n, ws.keys);
        threshold = kth_largest_key(policy, ws.keys, n, k, ws.scratch);
        count = count_at_least(policy, v, n, threshold);
        break;
      }
      ++stats.rescans;
      rank = topk_rules::rescan_rank(rank, k, count);
      const bool in_sample = rank <= sampled;
      threshold = topk_rules::lower_threshold(
          threshold, in_sample, in_sample ? read_key(policy, ws.scratch + (rank - 1)) : 0);
    }
  }
  count = select_at_least(policy, v, n, threshold, ws.candidates);
  stats.candidates = count;
  if (count > k) {
    threshold = keep_top_k(policy, v, ws.candidates, count, k, ws.scratch);
    count = k;
  }
  thrust::copy(policy, ws.candidates, ws.candidates + count, out);
  stats.threshold = topk_rules::key_magnitude(threshold);
  return count;
}

}  // namespace gw::kernels::thrust_algo
