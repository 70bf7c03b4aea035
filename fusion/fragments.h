// Streaming DiLoCo's fragments (Note [Streaming DiLoCo], plugin/local_sgd_averaging.h): the
// parameters cut into runs of whole tensors of about equal size, the fusion buckets cut at the
// runs' boundaries, and the step after which each fragment takes its outer step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fusion/bucket_plan.h"

namespace gw::fusion {

struct FragmentPlan {
  // Per fragment: its parameters are [first[f], first[f + 1]) in registration order
  // (first.size() = fragments + 1).
  std::vector<std::size_t> first;
  // `plan`'s buckets, each cut where a fragment ends, in `plan`'s launch order; every bucket lies
  // in one fragment. With one fragment, `plan` itself.
  BucketPlan buckets;
  // Per fragment: its buckets (indices into `buckets`), in launch order.
  std::vector<std::vector<std::size_t>> buckets_of;
  // Per fragment: its floats.
  std::vector<std::size_t> numel;
};

// Cuts the parameters (their sizes `numels`, bucketed by `plan`) into `fragments` runs: each
// boundary is the tensor boundary nearest to an equal share of the floats, every run holding at
// least one tensor. Throws std::invalid_argument when fragments is 0 or exceeds the tensors.
FragmentPlan plan_fragments(const BucketPlan& plan, const std::vector<std::size_t>& numels,
                            std::size_t fragments);

// Whether fragment f of `fragments` takes its outer step after step `step` (0-based) when each
// takes one every `period` steps: after steps period - 1 + d_f + j period (j >= 0), d_f =
// floor(f period / fragments), so fragment 0 keeps diloco's schedule and the others follow at
// even offsets. Requires fragments <= period.
bool fragment_syncs_after(std::int64_t step, std::size_t f, std::size_t fragments,
                          std::int64_t period);

}  // namespace gw::fusion
