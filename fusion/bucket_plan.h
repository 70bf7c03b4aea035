// Tensor fusion: how the flat gradient buffer is cut into buckets, each exchanged as one unit.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace gw::fusion {

// Note [Bucket plan]
// Parameters are registered in forward order and their gradients laid out in the flat buffer in
// that order; backward produces them in reverse. Buckets are filled walking the parameters from
// the last registered to the first, so bucket 0 holds the gradients backward finishes first and
// each bucket is one contiguous run of the flat buffer: the exchange reads and writes it in
// place, and fusing copies nothing. A bucket takes parameters while its bytes stay within the
// threshold; a parameter larger than the threshold gets a bucket of its own, and threshold 0 gives
// every parameter its own bucket. The plan is a pure function of the sizes and the threshold, both
// of which every rank holds identically (the layout and the configuration are compared across
// ranks at start), so every rank cuts the same buckets and launches them in the same order
// (Note [Launch order]).
struct Bucket {
  std::size_t index = 0;  // launch position
  std::size_t begin = 0;  // its parameters are [begin, end) in registration order
  std::size_t end = 0;
  std::size_t offset = 0;  // its elements are [offset, offset + numel) of the flat buffer
  std::size_t numel = 0;
};

struct BucketPlan {
  std::vector<Bucket> buckets;        // in launch order
  std::vector<std::size_t> bucket_of;  // per parameter (registration index): its bucket

  std::size_t size() const { return buckets.size(); }
  // "3 buckets of 8.0 MB, 4.0 MB, 1.2 MB" (MB = 10^6 bytes), for logs.
  std::string describe(std::size_t element_bytes) const;
};

// numels: each parameter's element count, in registration order (all > 0). threshold_bytes: the
// most bytes of one bucket (0: one bucket per parameter). Throws std::invalid_argument on an empty
// list or a zero size.
BucketPlan plan_buckets(const std::vector<std::size_t>& numels, std::size_t threshold_bytes,
                        std::size_t element_bytes = sizeof(float));

// The threshold in bytes for GRADWIRE_FUSION_THRESHOLD_MB's value (MiB, 2^20 bytes, as DDP's
// bucket_cap_mb); throws std::invalid_argument on a negative or non-finite value.
std::size_t threshold_bytes_from_mib(double mib);

}  // namespace gw::fusion
