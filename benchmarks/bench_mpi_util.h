// Helpers shared by the MPI benchmarks: an inner optimizer that does nothing, timing one call on
// every rank, and the medians of the slowest rank's times.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <functional>
#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "plugin/optimizer.h"

namespace gw::bench {

// The benches measure the exchange; there is nothing to update. With accepts_scale, step() leaves
// the sum over ranks in the gradients (Note [Who divides by the world size]).
class NoUpdate : public gw::Optimizer {
 public:
  explicit NoUpdate(bool accepts_scale) : accepts_scale_(accepts_scale) {}
  bool accepts_gradient_scale() const override { return accepts_scale_; }
  std::string name() const override { return "none"; }
  void step(const std::vector<gw::ParameterView>&) override {}
  double learning_rate() const override { return 0; }
  void set_learning_rate(double) override {}
  void save_state(std::ostream&) const override {}
  void load_state(std::istream&) override {}

 private:
  bool accepts_scale_;
};

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Times of the slowest rank, per iteration.
inline std::vector<double> max_over_ranks(std::vector<double> t) {
  MPI_Allreduce(MPI_IN_PLACE, t.data(), static_cast<int>(t.size()), MPI_DOUBLE, MPI_MAX,
                MPI_COMM_WORLD);
  return t;
}

// One call of `fn` on every rank, after a barrier: this rank's seconds.
inline double time_once(const std::function<void()>& fn) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  fn();
  return MPI_Wtime() - t0;
}

}  // namespace gw::bench
