// DGC's warm-up: which steps are compressed, and at what sparsity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gw::compressors {

// Steps before begin_step are not compressed (exchanged dense). From begin_step on, a list of L
// sparsities is spread evenly over rampup_steps: value i holds for the steps
// [begin + floor(i*R/L), begin + floor((i+1)*R/L)), and the last value holds from begin + R on.
// A single value holds from begin_step on.
class SparsitySchedule {
 public:
  // Throws std::invalid_argument: an empty list, a value outside [0, 1), a negative step count,
  // or a list of L > 1 values with rampup_steps < L (some value would never be used).
  SparsitySchedule(std::vector<double> sparsities, std::int64_t begin_step,
                   std::int64_t rampup_steps);

  bool compressing(std::int64_t step) const { return step >= begin_; }
  // The list position in force at `step` (0 before begin_step).
  std::size_t stage(std::int64_t step) const;
  double sparsity(std::int64_t step) const { return values_[stage(step)]; }
  // The first step at the final sparsity.
  std::int64_t warmup_end_step() const { return values_.size() > 1 ? begin_ + rampup_ : begin_; }

  const std::vector<double>& values() const { return values_; }

 private:
  std::vector<double> values_;
  std::int64_t begin_;
  std::int64_t rampup_;
};

// The most pairs sent for a tensor of `numel` elements at `sparsity`: ceil(numel * (1 -
// sparsity)), at least 1, at most numel. A guard of 1e-9 relative keeps 1000 x (1 - 0.999) at 1
// although 1 - 0.999 is slightly above 0.001 in binary.
std::size_t sparse_count(std::size_t numel, double sparsity);

}  // namespace gw::compressors
