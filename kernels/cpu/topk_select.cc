#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>

#include "kernels/topk.h"
#include "kernels/topk_rules.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// Note [Sampled top-k]
// An exact top-k of a 25M-float gradient with std::nth_element costs a copy plus a selection over
// all of it, tens of times one read of the buffer. DGC instead estimates the threshold from a
// small sample and keeps whatever passes it. Here:
//  1. Sample s = max(n * sample_ratio, 64 n / k) magnitudes (at least ~64 of the top k are then
//     expected in the sample) as random blocks of 16 consecutive floats at multiples of 16
//     (drawn with replacement): one 64-byte cache line per 16 samples when v is 64-byte aligned,
//     two at worst, instead of one per sample. Blocks are placed by index, not by address, so
//     that the result does not depend on where v lives. With s >= n / 2 a sample saves nothing:
//     the threshold is then the exact k-th magnitude of all n keys (a copy).
//  2. Threshold t = the sample's magnitude at rank 1.3 k s / n: about 1.3 k elements pass it.
//  3. One streaming pass collects (index, key) of the elements >= t into a buffer of
//     C = max(2k, 1024) entries. Each block of 64 floats becomes a 64-bit mask of the elements
//     that pass (vector compares), and only the set bits are visited.
//     If the buffer fills, it is cut to its exact top k and the threshold raised strictly above
//     the k-th kept key: a threshold that was too low costs O(C) per C - k >= C / 2 new
//     candidates, never a second pass, and heavy ties (all zeros) stop passing after one cut.
//  4. More than k candidates: their exact top k. Between topk_min_count(k) and k: all of them.
//     Fewer: the sample misled (it held more large values than v does, by chance). Rescan with a
//     lower threshold: the sample's key at a rank further down in proportion to the shortfall
//     (at least twice as far), or half of t past the sample's end; after 2 rescans, the exact
//     k-th magnitude.
// Every candidate set holds every element above its final threshold, so each result is a true
// top set by magnitude; only its size may fall short of k, by at most kTopkCountTolerance. Cuts
// keep index order (a compaction, not a reorder), so the output is in ascending index order.
//
// The scan dominates: on 25M N(0,1) floats at k = 25000 the sample, its threshold and the final
// cut together cost a fraction of it, and the scan itself about one read pass.
// gradwire_bench_compress measures the whole encode against nth_element and a read pass
// (docs/RESULTS.md, Compression).
//
// Magnitudes are compared as keys: the float's bits without the sign. For non-negative floats
// integer order is value order, and NaN keys (above 0x7f800000) sort above +inf, so a NaN always
// passes every threshold. A threshold is held as floor = t - 1 (mod 2^32) and "key >= t" is the
// sign bit of floor - key: no overflow for keys below 2^31 and floor in [-1, 2^31 - 1], and t = 0
// (everything passes) needs no special case.

namespace gw::kernels {

namespace {

// The path, sample and thresholds are decided in kernels/topk_rules.h, shared with the device
// selector so that both select the same indices.
using topk_rules::key_magnitude;
using topk_rules::kMaxRescans;
using topk_rules::kMinCapacity;
using topk_rules::kSampleBlock;
using topk_rules::kSignBit;
using topk_rules::magnitude_key;

constexpr std::size_t kScanBlock = 64;  // floats per scan block: one 64-bit pass mask

template <class T>
T* grow(std::vector<T>& buffer, std::size_t size) {
  if (buffer.size() < size) buffer.resize(size);
  return buffer.data();
}

// Bit j set when |block[j]| (j < len <= kScanBlock) passes floor (see the Note): the scan's
// inner loop, which must keep up with memory. Against one read pass of 25M N(0,1) floats it
// kept up at k = 0.1% of n and fell a little behind at k = 1%. Testing each block with an
// auto-vectorised OR first and then walking every element of a block where something passed
// was slower at both, and far slower at k = 1%, where more than half of all blocks hold a
// candidate.
#if defined(__SSE2__)
// SSE2 is part of x86-64 itself: no run-time check. Keys and floor compare as int32 (keys lie in
// [0, 2^31), floor in [-1, 2^31)), four compares to four mask bits per movemask.
std::uint64_t pass_mask(const float* block, std::size_t len, std::uint32_t floor) {
  const __m128i floor4 = _mm_set1_epi32(static_cast<std::int32_t>(floor));
  const __m128i abs_mask = _mm_set1_epi32(static_cast<std::int32_t>(~kSignBit));
  std::uint64_t mask = 0;
  std::size_t j = 0;
  for (; j + 4 <= len; j += 4) {
    const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + j));
    const __m128i passed = _mm_cmpgt_epi32(_mm_and_si128(bits, abs_mask), floor4);
    mask |= static_cast<std::uint64_t>(_mm_movemask_ps(_mm_castsi128_ps(passed))) << j;
  }
  for (; j < len && j < kScanBlock; ++j) {  // (the second test tells g++ that j < 64)
    mask |= static_cast<std::uint64_t>((floor - magnitude_key(block[j])) >> 31) << j;
  }
  return mask;
}
#else
// Elsewhere: a branch-free OR over the block, which g++ -O2/-O3 vectorises, skips the blocks
// where nothing passes (most of them at DGC's sparsities); a scalar loop builds the mask of the
// others.
std::uint64_t pass_mask(const float* block, std::size_t len, std::uint32_t floor) {
  std::uint32_t any = 0;
  for (std::size_t j = 0; j < len; ++j) any |= floor - magnitude_key(block[j]);
  if ((any & kSignBit) == 0) return 0;
  std::uint64_t mask = 0;
  for (std::size_t j = 0; j < len && j < kScanBlock; ++j) {
    mask |= static_cast<std::uint64_t>((floor - magnitude_key(block[j])) >> 31) << j;
  }
  return mask;
}
#endif

// The k-th largest of keys[0..m) (1 <= k <= m), and how many keys equal to it a top k includes
// (the rest of the top k is strictly larger).
struct KthKey {
  std::uint32_t key;
  std::size_t ties_in_top;
};

// By nth_element, reordering keys.
KthKey kth_by_nth_element(std::uint32_t* keys, std::size_t m, std::size_t k) {
  std::nth_element(keys, keys + (k - 1), keys + m, std::greater<>());
  const std::uint32_t kth = keys[k - 1];
  const std::size_t above = static_cast<std::size_t>(
      std::count_if(keys, keys + (k - 1), [kth](std::uint32_t key) { return key > kth; }));
  return {kth, k - above};
}

// Note [Bucketed selection]
// nth_element costs several ns a key: on the 250k-key sample of a 25M gradient, a sizeable
// fraction of a read of the gradient itself. Instead, a radix select: a histogram of 12 key
// bits finds the bucket holding the k-th largest in one pass, the bucket's keys are gathered, and
// the next 12 bits split that bucket, until it is small; nth_element finishes. The first level's
// bits (31..19: exponent and 4 mantissa bits) split a bucket per 1/16 octave, which leaves a few
// hundred keys for the tail ranks of a sample; a candidate buffer, whose keys all lie in the
// octave or two above its threshold, needs the second level. Four interleaved histograms keep
// runs of equal buckets from serialising on one counter. Heavy ties keep everything in one
// bucket: each level then costs a pass, never more. keys[0..m) are left untouched.
constexpr std::size_t kRadixBits = 12;
constexpr std::size_t kBuckets = std::size_t{1} << kRadixBits;
constexpr std::uint32_t kBucketMask = kBuckets - 1;
constexpr std::size_t kHistograms = 4;
constexpr std::size_t kBucketedMinKeys = 16384;  // below, nth_element alone is as fast

KthKey kth_largest(const std::uint32_t* keys, std::size_t m, std::size_t k,
                   std::vector<std::uint32_t>& histogram, std::vector<std::uint32_t>& bucket) {
  if (m < kBucketedMinKeys) {
    std::uint32_t* copy = grow(bucket, m);
    std::copy(keys, keys + m, copy);
    return kth_by_nth_element(copy, m, k);
  }
  std::uint32_t* h = grow(histogram, kHistograms * kBuckets);
  // The first level reads keys; later ones narrow `bucket` in place (each bucket is smaller than
  // the one before, so it never reallocates after the first level).
  const std::uint32_t* src = keys;
  std::uint32_t* out = nullptr;
  for (int shift = 31 - static_cast<int>(kRadixBits); shift >= 0 && m >= kBucketedMinKeys;
       shift -= static_cast<int>(kRadixBits)) {
    auto digit = [shift](std::uint32_t key) { return (key >> shift) & kBucketMask; };
    std::fill(h, h + kHistograms * kBuckets, 0u);
    std::size_t i = 0;
    for (; i + kHistograms <= m; i += kHistograms) {
      for (std::size_t j = 0; j < kHistograms; ++j) ++h[j * kBuckets + digit(src[i + j])];
    }
    for (; i < m; ++i) ++h[digit(src[i])];
    std::size_t above = 0, in_b = 0;
    std::uint32_t b = kBucketMask;
    for (;; --b) {
      in_b = 0;
      for (std::size_t j = 0; j < kHistograms; ++j) in_b += h[j * kBuckets + b];
      if (above + in_b >= k) break;
      above += in_b;
    }
    // Gather bucket b, branch-free (room for one write past its last key; in place from the
    // second level on, where out[count] with count <= i is written after src[i] is read).
    out = grow(bucket, in_b + 1);
    std::size_t count = 0;
    for (i = 0; i < m; ++i) {
      const std::uint32_t key = src[i];
      out[count] = key;
      count += digit(key) == b;
    }
    src = out;
    m = count;
    k -= above;
  }
  // Every key equal to the k-th shares its bucket, so the ties count is the whole array's.
  return kth_by_nth_element(out, m, k);
}

// splitmix64: a tiny, well-mixed generator, so a sample depends on the seed alone.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

 private:
  std::uint64_t state_;
};

}  // namespace

std::size_t topk_min_count(std::size_t k) {
  // k - floor(k / 20) == ceil(k * 0.95), without the rounding of 0.95 in binary.
  static_assert(kTopkCountTolerance == 0.05, "topk_min_count's integer form assumes 1/20");
  return k - k / 20;
}

std::size_t TopkSelector::select(const float* v, std::size_t n, std::size_t k, double sample_ratio,
                                 std::uint64_t seed, std::uint32_t* out) {
  topk_rules::check_select_arguments(n, sample_ratio);
  stats_ = TopkStats{};
  if (k == 0) {
    stats_.threshold = std::numeric_limits<float>::infinity();
    return 0;
  }
  if (k >= n) {
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::uint32_t>(i);
    stats_.candidates = n;
    return n;
  }

  const std::size_t min_count = topk_min_count(k);
  const std::size_t capacity = std::min(n, std::max(2 * k, kMinCapacity));
  const std::size_t sample_size = topk_rules::sample_size(n, k, sample_ratio);

  std::size_t count;
  if (topk_rules::use_exact_threshold(sample_size, n)) {
    stats_.sample_size = n;
    count = scan(v, n, k, capacity, exact_kth_key(v, n, k));
  } else {
    const std::size_t sampled = draw_sample(v, n, sample_size, seed);
    stats_.sample_size = sampled;
    std::size_t rank = topk_rules::first_rank(sampled, n, k);
    std::uint32_t threshold = sample_key_at_rank(rank);
    for (count = scan(v, n, k, capacity, threshold); count < min_count;
         count = scan(v, n, k, capacity, threshold)) {
      if (stats_.rescans == kMaxRescans) {
        // Exact k-th key: at least k elements pass it, so this scan cannot fall short.
        stats_.exact_fallback = true;
        count = scan(v, n, k, capacity, exact_kth_key(v, n, k));
        break;
      }
      ++stats_.rescans;
      // Too few passed: this region of the sample was denser than v. Go further down the sample
      // in proportion to the shortfall (at least twice as far); past its end, halve t instead.
      rank = topk_rules::rescan_rank(rank, k, count);
      const bool in_sample = rank <= sampled;
      threshold = topk_rules::lower_threshold(threshold, in_sample,
                                              in_sample ? sample_key_at_rank(rank) : 0);
    }
  }

  if (count > k) {
    keep_top(k);
    count = k;
  }
  for (std::size_t i = 0; i < count; ++i) out[i] = candidates_[i].index;
  stats_.threshold = key_magnitude(threshold_key_);
  return count;
}

std::uint32_t TopkSelector::exact_kth_key(const float* v, std::size_t n, std::size_t k) {
  std::uint32_t* keys = grow(exact_keys_, n);
  for (std::size_t i = 0; i < n; ++i) keys[i] = magnitude_key(v[i]);
  return kth_largest(keys, n, k, histogram_, bucket_).key;
}

std::size_t TopkSelector::draw_sample(const float* v, std::size_t n, std::size_t size,
                                      std::uint64_t seed) {
  const std::size_t blocks = topk_rules::sample_blocks(size);
  const std::uint64_t available = n / kSampleBlock;  // whole blocks only; size < n / 2 here
  std::uint32_t* sample = grow(sample_, blocks * kSampleBlock);
  SplitMix64 rng(seed);
  for (std::size_t b = 0; b < blocks; ++b) {
    // Uniform block in [0, available) from the top 32 bits (available < 2^28, no overflow).
    const std::size_t block = static_cast<std::size_t>(((rng.next() >> 32) * available) >> 32);
    const float* src = v + block * kSampleBlock;
    for (std::size_t j = 0; j < kSampleBlock; ++j) {
      sample[b * kSampleBlock + j] = magnitude_key(src[j]);
    }
  }
  sample_used_ = blocks * kSampleBlock;
  return sample_used_;
}

std::uint32_t TopkSelector::sample_key_at_rank(std::size_t rank) {
  return kth_largest(sample_.data(), sample_used_, rank, histogram_, bucket_).key;
}

std::size_t TopkSelector::scan(const float* v, std::size_t n, std::size_t k, std::size_t capacity,
                               std::uint32_t threshold) {
  // Room for one block past the capacity: a block is appended without bounds checks, and the
  // buffer is cut back once it holds capacity or more.
  Candidate* candidates = grow(candidates_, capacity + kScanBlock);
  threshold_key_ = threshold;
  std::uint32_t floor = threshold - 1u;
  std::size_t count = 0, cut = 0;  // candidates now, and those dropped by cuts so far
  // Appends the passing elements of block [begin, begin + len), visiting only those (0.8 a block
  // on average at k = 1% of n).
  auto collect = [&](std::size_t begin, std::size_t len) {
    for (std::uint64_t mask = pass_mask(v + begin, len, floor); mask != 0; mask &= mask - 1) {
      const std::size_t i = begin + static_cast<std::size_t>(__builtin_ctzll(mask));
      candidates[count++] = Candidate{static_cast<std::uint32_t>(i), magnitude_key(v[i])};
    }
    if (count >= capacity) {
      count_ = count;
      keep_top(k);
      cut += count - k;
      count = k;
      floor = threshold_key_;  // from now on only keys strictly above the k-th kept one
    }
  };
  std::size_t begin = 0;
  for (; begin + kScanBlock <= n; begin += kScanBlock) {
    collect(begin, kScanBlock);
  }
  if (begin < n) collect(begin, n - begin);
  count_ = count;
  stats_.candidates = cut + count;
  return count;
}

void TopkSelector::keep_top(std::size_t k) {
  // The k-th largest key from a scratch copy, then an in-place compaction that keeps index order.
  Candidate* candidates = candidates_.data();
  std::uint32_t* keys = grow(keys_, count_);
  for (std::size_t i = 0; i < count_; ++i) keys[i] = candidates[i].key;
  const KthKey kth = kth_largest(keys, count_, k, histogram_, bucket_);
  std::size_t kept = 0, ties = kth.ties_in_top;
  // Branch-free: about 3 in 4 candidates stay, in no pattern a branch predictor could learn.
  for (std::size_t i = 0; i < count_; ++i) {
    const Candidate c = candidates[i];
    const bool tie = c.key == kth.key;
    const bool keep = c.key > kth.key || (tie && ties > 0);
    candidates[kept] = c;
    kept += keep;
    ties -= tie && keep;
  }
  count_ = kept;
  threshold_key_ = kth.key;
}

}  // namespace gw::kernels
