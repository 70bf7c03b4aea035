#include "compressors/sparsity_schedule.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace gw::compressors {

SparsitySchedule::SparsitySchedule(std::vector<double> sparsities, std::int64_t begin_step,
                                   std::int64_t rampup_steps)
    : values_(std::move(sparsities)), begin_(begin_step), rampup_(rampup_steps) {
  if (values_.empty()) throw std::invalid_argument("sparsity schedule: no sparsity given");
  for (double s : values_) {
    if (!(s >= 0.0 && s < 1.0)) {
      throw std::invalid_argument("sparsity schedule: sparsity " + std::to_string(s) +
                                  " is outside [0, 1)");
    }
  }
  if (begin_ < 0 || rampup_ < 0) {
    throw std::invalid_argument("sparsity schedule: begin step and ramp-up steps must be >= 0");
  }
  if (values_.size() > 1 && rampup_ < static_cast<std::int64_t>(values_.size())) {
    throw std::invalid_argument("sparsity schedule: a list of " + std::to_string(values_.size()) +
                                " sparsities needs at least as many ramp-up steps, got " +
                                std::to_string(rampup_));
  }
}

std::size_t SparsitySchedule::stage(std::int64_t step) const {
  const auto n = static_cast<std::int64_t>(values_.size());
  if (n == 1 || step < begin_) return 0;
  const std::int64_t into = step - begin_;
  // The last i whose first step begin + floor(i*R/n) is <= step.
  std::int64_t i = n - 1;
  while (i > 0 && (i * rampup_) / n > into) --i;
  return static_cast<std::size_t>(i);
}

std::size_t sparse_count(std::size_t numel, double sparsity) {
  const double exact = static_cast<double>(numel) * (1.0 - sparsity);
  const double k = std::ceil(exact - 1e-9 * static_cast<double>(numel));
  if (k < 1.0) return numel == 0 ? 0 : 1;
  if (k >= static_cast<double>(numel)) return numel;
  return static_cast<std::size_t>(k);
}

}  // namespace gw::compressors
