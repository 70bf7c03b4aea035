#include "fusion/launch_tracker.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace gw::fusion {

LaunchTracker::LaunchTracker(const BucketPlan& plan) : bucket_of_(plan.bucket_of) {
  for (const Bucket& b : plan.buckets) pending_start_.push_back(b.end - b.begin);
  pending_ = pending_start_;
  marked_.assign(bucket_of_.size(), 0);
}

std::size_t LaunchTracker::mark_ready(std::size_t p) {
  if (p >= marked_.size()) {
    throw std::logic_error("LaunchTracker: parameter " + std::to_string(p) + " of " +
                           std::to_string(marked_.size()));
  }
  if (marked_[p]) {
    throw std::logic_error("LaunchTracker: parameter " + std::to_string(p) + " marked twice");
  }
  marked_[p] = 1;
  ++marked_count_;
  --pending_[bucket_of_[p]];
  return release();
}

std::size_t LaunchTracker::mark_all() {
  for (std::size_t p = 0; p < marked_.size(); ++p) {
    if (!marked_[p]) {
      marked_[p] = 1;
      --pending_[bucket_of_[p]];
    }
  }
  marked_count_ = marked_.size();
  return release();
}

void LaunchTracker::reset() {
  pending_ = pending_start_;
  std::fill(marked_.begin(), marked_.end(), 0);
  marked_count_ = 0;
  next_ = 0;
}

std::size_t LaunchTracker::release() {
  const std::size_t before = next_;
  while (next_ < pending_.size() && pending_[next_] == 0) ++next_;
  return next_ - before;
}

}  // namespace gw::fusion
