#include "benchmarks/bench_mpi_driver.h"

#include <mpi.h>

#include <algorithm>
#include <utility>

#include "plugin/comm/world_communicator.h"

namespace gw::bench {

double time_once(const std::function<void()>& fn) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  fn();
  return MPI_Wtime() - t0;
}

double slowest(double seconds) {
  MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return seconds;
}

std::vector<double> max_over_ranks(std::vector<double> t) {
  MPI_Allreduce(MPI_IN_PLACE, t.data(), static_cast<int>(t.size()), MPI_DOUBLE, MPI_MAX,
                MPI_COMM_WORLD);
  return t;
}

std::vector<double> rotate_medians(const Variants& variants, int iterations,
                                   const std::function<void()>& refill) {
  const auto after = [&](int it) {
    if (refill && it % 8 == 7) refill();
  };
  std::vector<double> out;
  for (std::vector<double>& t : rotate(variants, iterations, time_once, after)) {
    out.push_back(median(max_over_ranks(std::move(t))));
  }
  return out;
}

double warm_up(const Variants& variants, int rounds) {
  double round = 0;
  for (int r = 0; r < rounds; ++r) {
    round = 0;
    for (const Variant& v : variants) round += time_once(v.run);
  }
  return round;
}

double allreduce_bus_factor(int n) { return n > 1 ? 2.0 * (n - 1) / n : 0.0; }

int iterations_for_size(const Variants& variants, std::size_t probe, double budget_s) {
  warm_up(variants, 3);
  const double probe_s = slowest(time_once(variants[probe].run));
  const double round_s = static_cast<double>(variants.size()) * probe_s;
  return std::clamp(static_cast<int>(budget_s / (round_s + 1e-6)), 5, 2000);
}

Timed run_timed(const Variants& variants, int warm_rounds, double budget_s, int fewest,
                const std::function<void()>& refill) {
  Timed out;
  out.iterations = fewest;
  if (warm_rounds > 0) {
    const double round = slowest(warm_up(variants, warm_rounds));
    out.iterations = std::clamp(static_cast<int>(budget_s / (round + 1e-9)), fewest, 1000);
  }
  if (refill) refill();
  out.median = rotate_medians(variants, out.iterations, refill);
  return out;
}

MpiBench::MpiBench(std::string name, std::string report_path, int* argc, char*** argv)
    : mpi_(argc, argv),
      // Host buffers: GRADWIRE_BACKEND=auto is MPI (Note [Choosing the backend]).
      comm_(std::make_shared<gw::CountingCommunicator>(
          gw::make_world_communicator(gw::config::Config::from_environment(), gw::Device::kHost))),
      name_(std::move(name)),
      report_path_(std::move(report_path)),
      rank_(comm_->rank()),
      size_(comm_->size()) {}

int MpiBench::conclude(const std::vector<Target>& targets, const char* method,
                       nlohmann::json fields) const {
  if (rank_ != 0) return 0;
  print_verdicts(targets);
  if (report_path_.empty()) return 0;
  fields["benchmark"] = name_;
  fields["world_size"] = size_;
  fields["method"] = method;
  if (!targets.empty()) fields["targets"] = targets_json(targets);
  return write_report(fields, report_path_);
}

}  // namespace gw::bench
