#include "fusion/bucket_plan.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace gw::fusion {

BucketPlan plan_buckets(const std::vector<std::size_t>& numels, std::size_t threshold_bytes,
                        std::size_t element_bytes) {
  if (numels.empty()) throw std::invalid_argument("plan_buckets: no parameters");
  if (element_bytes == 0) throw std::invalid_argument("plan_buckets: element size 0");
  std::vector<std::size_t> offsets(numels.size());
  std::size_t offset = 0;
  for (std::size_t p = 0; p < numels.size(); ++p) {
    if (numels[p] == 0) {
      throw std::invalid_argument("plan_buckets: parameter " + std::to_string(p) +
                                  " has no elements");
    }
    offsets[p] = offset;
    offset += numels[p];
  }

  BucketPlan plan;
  plan.bucket_of.assign(numels.size(), 0);
  std::size_t end = numels.size();  // the open bucket is [p, end)
  std::size_t bytes = 0;
  const auto close = [&](std::size_t begin) {
    Bucket b;
    b.index = plan.buckets.size();
    b.begin = begin;
    b.end = end;
    b.offset = offsets[begin];
    b.numel = offsets[end - 1] + numels[end - 1] - offsets[begin];
    for (std::size_t q = begin; q < end; ++q) plan.bucket_of[q] = b.index;
    plan.buckets.push_back(b);
    end = begin;
    bytes = 0;
  };
  for (std::size_t p = numels.size(); p-- > 0;) {
    const std::size_t add = numels[p] * element_bytes;
    // The open bucket is [p + 1, end): close it when p would push it past the threshold.
    if (p + 1 < end && bytes + add > threshold_bytes) close(p + 1);
    bytes += add;
  }
  close(0);
  return plan;
}

std::string BucketPlan::describe(std::size_t element_bytes) const {
  std::string out = std::to_string(buckets.size()) + (buckets.size() == 1 ? " bucket" : " buckets");
  constexpr std::size_t kListed = 8;
  for (std::size_t b = 0; b < buckets.size() && b < kListed; ++b) {
    char mb[32];
    std::snprintf(mb, sizeof mb, "%.2f MB",
                  static_cast<double>(buckets[b].numel * element_bytes) / 1e6);
    out += (b == 0 ? " of " : ", ") + std::string(mb);
  }
  if (buckets.size() > kListed) out += ", ...";
  return out;
}

std::size_t threshold_bytes_from_mib(double mib) {
  if (!std::isfinite(mib) || mib < 0) {
    throw std::invalid_argument("fusion threshold must be a finite number of MiB >= 0, got " +
                                std::to_string(mib));
  }
  return static_cast<std::size_t>(std::llround(mib * 1048576.0));
}

}  // namespace gw::fusion
