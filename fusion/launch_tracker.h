// Which buckets may launch, from the gradient_ready marks of one step.
#pragma once

#include <cstddef>
#include <vector>

#include "fusion/bucket_plan.h"

namespace gw::fusion {

// Note [Launch order]
// Buckets launch strictly in plan order: bucket b is released once every gradient of b is ready
// and buckets 0..b-1 were released. Every rank therefore starts the same collectives in the same
// order whatever order its own backward marks gradients in (a rank whose backward ran the layers
// in another order, or faster, or slower, only changes when a bucket is released, never which
// comes next), which MPI and NCCL require of collectives on one communicator. A bucket completed
// early waits for the ones before it; with the reference trainer's backward (reverse registration
// order) buckets complete in plan order and none waits.
class LaunchTracker {
 public:
  explicit LaunchTracker(const BucketPlan& plan);

  // Marks parameter p ready for this step and returns how many buckets that released: they are
  // [released() - returned, released()). Precondition (std::logic_error): p in range, not marked
  // yet this step.
  std::size_t mark_ready(std::size_t p);
  // Marks every parameter not marked yet (a program that does not report gradients one by one);
  // returns how many buckets that released.
  std::size_t mark_all();
  // Starts the next step: nothing marked, nothing released.
  void reset();

  bool is_marked(std::size_t p) const { return marked_[p] != 0; }
  std::size_t marked() const { return marked_count_; }
  bool none_marked() const { return marked_count_ == 0; }
  bool all_marked() const { return marked_count_ == marked_.size(); }
  std::size_t released() const { return next_; }

 private:
  std::size_t release();

  std::vector<std::size_t> bucket_of_;
  std::vector<std::size_t> pending_start_;  // per bucket: its parameter count
  std::vector<std::size_t> pending_;        // per bucket: gradients not yet ready this step
  std::vector<char> marked_;
  std::size_t marked_count_ = 0;
  std::size_t next_ = 0;  // the first bucket not released
};

}  // namespace gw::fusion
