// The benchmarks' driver under MPI (bench_driver.h for the rest): each call timed on every rank,
// the rotation's medians of the slowest rank's times, and a run's frame from MPI's start to the
// verdicts and the report on rank 0.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "benchmarks/bench_driver.h"
#include "plugin/comm/counting_communicator.h"
#include "plugin/comm/mpi/mpi_runtime.h"

namespace gw::bench {

// One call of `fn` on every rank, after a barrier: this rank's seconds.
double time_once(const std::function<void()>& fn);
// The slowest rank's `seconds`.
double slowest(double seconds);
// Times of the slowest rank, per iteration.
std::vector<double> max_over_ranks(std::vector<double> t);

// The variants in rotation (Note [Rotation]), each call timed by time_once: per variant the
// median over iterations of the slowest rank's time. `refill` (may be empty) after every 8th
// iteration: the exchanges sum n copies each call, so the values must go back now and then.
std::vector<double> rotate_medians(const Variants& variants, int iterations,
                                   const std::function<void()>& refill);

// `rounds` rounds of every variant, each timed by time_once: this rank's seconds for the last.
double warm_up(const Variants& variants, int rounds);

// An allreduce's bus bandwidth over its algorithm bandwidth, 2(n-1)/n (0 on one rank).
double allreduce_bus_factor(int n);

// The iterations for one size of a collective's benchmark: three warm-up rounds of every
// variant, then one call of variants[probe] (the bare collective) timed, and as many iterations
// as `budget_s` allows at that time per variant (5 to 2000).
int iterations_for_size(const Variants& variants, std::size_t probe, double budget_s);

struct Timed {
  int iterations = 0;
  std::vector<double> median;  // per variant, as rotate_medians
};
// A budgeted rotation: `warm_rounds` of warm-up, then as many iterations as `budget_s` allows at
// the slowest rank's time for the last warm-up round (`fewest` to 1000; `fewest` without a
// warm-up), refill, rotate_medians.
Timed run_timed(const Variants& variants, int warm_rounds, double budget_s, int fewest,
                const std::function<void()>& refill);

// A benchmark run under MPI: MPI started (after the command line is parsed), gradwire's counting
// communicator over the world, and the end: the verdicts and the report.
class MpiBench {
 public:
  // `report_path`: --report's value, empty for no report.
  MpiBench(std::string name, std::string report_path, int* argc, char*** argv);

  const std::shared_ptr<gw::CountingCommunicator>& comm() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }

  // On rank 0, prints the verdicts, then writes the report when one was asked for: `fields` with
  // benchmark, world_size, method and (if any) targets added. Returns the exit code.
  int conclude(const std::vector<Target>& targets, const char* method, nlohmann::json fields) const;

 private:
  gw::MpiRuntime mpi_;
  std::shared_ptr<gw::CountingCommunicator> comm_;
  std::string name_, report_path_;
  int rank_ = 0, size_ = 1;
};

}  // namespace gw::bench
