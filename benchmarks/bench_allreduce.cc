// gradwire_bench_allreduce: the overhead of gradwire's dense exchange against a bare MPI_Allreduce
// of the same flat buffer, measured side by side in one run.
//
//   mpirun -np 4 gradwire_bench_allreduce --report allreduce.json
//   mpirun -np 2 gradwire_bench_allreduce --device cuda   (bench_allreduce_device.cc)
//
// For each size, three paths are timed in rotation (Note [Rotation]; barrier, time one call, per
// iteration) and the medians are compared, so drift on a shared machine hits all alike:
//   gw      DistributedOptimizer::step() with an inner optimizer that does no work but accepts the
//           gradient scale: the counting communicator and the sum allreduce, with the division by
//           the world size folded into the optimizer's own loop
//           (Note [Who divides by the world size]); this is the path gradwire_train's SGD and
//           Adam take.
//   gw+div  DistributedOptimizer::synchronize_gradients(): the same plus a separate pass dividing
//           by the world size, the path of optimizers that do not accept a gradient scale.
//   mpi     MPI_Allreduce(MPI_IN_PLACE, MPI_SUM) of the same number of floats.
// A separate, untimed pass checks the averaged result (#wrong).
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "benchmarks/bench_allreduce_device.h"
#include "benchmarks/bench_mpi_driver.h"
#include "benchmarks/bench_workload.h"
#include "cli/cli.h"
#include "plugin/distributed_optimizer.h"

namespace {

using gw::bench::NoUpdate;

constexpr const char* kMethod =
    "median over rotating iterations of the slowest rank's time; gradwire = "
    "DistributedOptimizer::step with an inner optimizer that applies the 1/n gradient scale "
    "in its own loop (the path of gradwire_train's SGD and Adam); "
    "gradwire_separate_divide = DistributedOptimizer::synchronize_gradients (sum allreduce "
    "+ a pass dividing by n); mpi = MPI_Allreduce(MPI_IN_PLACE, MPI_SUM) of the same "
    "floats";

struct Options {
  std::string report_path;
  gw::bench::AllreduceSettings sizes;
  std::string device = "cpu";
};

void add_options(gw::cli::Parser& app, Options& o) {
  app.add("--report", o.report_path, "Write the JSON report here (rank 0)");
  app.add("--min-bytes", o.sizes.min_bytes).show_default();
  app.add("--max-bytes", o.sizes.max_bytes).show_default();
  app.add("--seconds-per-size", o.sizes.seconds_per_size,
          "Rough time budget per size (both sides together)")
      .show_default();
  app.add("--device", o.device,
          "cpu: host buffers, gradwire's DistributedOptimizer vs MPI_Allreduce; cuda: CUDA "
          "device buffers, gradwire's communicator vs the bare ncclAllReduce or "
          "MPI_Allreduce")
      .show_default()
      .one_of({"cpu", "cuda"});
}

void print_header(int n) {
  std::printf("# gradwire_bench_allreduce: %d ranks, float32, sum then average\n", n);
  std::printf("# %12s %10s | %10s %8s %8s | %10s | %10s %8s %8s | %6s %8s %6s\n", "size(B)",
              "count", "gw(us)", "algbw", "busbw", "gw+div(us)", "mpi(us)", "algbw", "busbw",
              "ratio", "ratio+div", "#wrong");
}

// One size's figures: the medians of the three paths and the untimed check's wrong elements.
struct SizeTimes {
  std::size_t bytes = 0, count = 0;
  int iterations = 0;
  double gw_s = 0, div_s = 0, mpi_s = 0;
  std::int64_t wrong = 0;
};

// Untimed: rank r contributes r + 1 + (i % 5); the average is exact in fp32. Returns the elements
// wrong, summed over ranks.
std::int64_t count_wrong_average(gw::DistributedOptimizer& opt, std::size_t count, int rank,
                                 int n) {
  float* grad = opt.gradient(0);
  for (std::size_t i = 0; i < count; ++i) grad[i] = static_cast<float>(rank + 1 + i % 5);
  opt.synchronize_gradients();
  std::int64_t wrong = 0;
  for (std::size_t i = 0; i < count; ++i) {
    wrong += grad[i] != static_cast<float>((n + 1) / 2.0 + i % 5);
  }
  MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return wrong;
}

// The three paths on one flat buffer of `bytes`: checked, warmed up, then timed in rotation.
SizeTimes measure_size(const gw::bench::MpiBench& bench, std::size_t bytes, double budget_s) {
  SizeTimes t;
  t.bytes = bytes;
  t.count = bytes / sizeof(float);
  const std::size_t count = t.count;
  std::vector<float> param(count, 0.0f), plain(count);
  const gw::DistributedOptimizerOptions options = gw::bench::make_options("");
  gw::DistributedOptimizer opt(bench.comm(), std::make_unique<NoUpdate>(true),
                               {{"flat", param.data(), count}}, options);
  gw::DistributedOptimizer opt_div(bench.comm(), std::make_unique<NoUpdate>(false),
                                   {{"flat", param.data(), count}}, options);
  float* grad = opt.gradient(0);
  std::fill(opt_div.gradient(0), opt_div.gradient(0) + count, 1.0f);
  t.wrong = count_wrong_average(opt, count, bench.rank(), bench.size());

  // Keep the values bounded: every call sums n copies.
  const auto refill = [&] {
    std::fill(grad, grad + count, 1.0f);
    std::fill(plain.begin(), plain.end(), 1.0f);
  };
  refill();
  enum { kGw, kDiv, kMpi };
  const gw::bench::Variants variants = {{"gw", [&] { opt.step(); }},
                                        {"gw+div", [&] { opt_div.synchronize_gradients(); }},
                                        {"mpi", [&] {
                                           MPI_Allreduce(MPI_IN_PLACE, plain.data(),
                                                         static_cast<int>(count), MPI_FLOAT,
                                                         MPI_SUM, MPI_COMM_WORLD);
                                         }}};
  t.iterations = gw::bench::iterations_for_size(variants, kMpi, budget_s);
  const std::vector<double> med = gw::bench::rotate_medians(variants, t.iterations, refill);
  t.gw_s = med[kGw];
  t.div_s = med[kDiv];
  t.mpi_s = med[kMpi];
  return t;
}

void print_row(const SizeTimes& t, double bus_factor) {
  const double gw_alg = t.bytes / t.gw_s / 1e9, mpi_alg = t.bytes / t.mpi_s / 1e9;
  std::printf(
      "  %12zu %10zu | %10.1f %8.3f %8.3f | %10.1f | %10.1f %8.3f %8.3f | %6.3f %8.3f %6lld\n",
      t.bytes, t.count, t.gw_s * 1e6, gw_alg, gw_alg * bus_factor, t.div_s * 1e6, t.mpi_s * 1e6,
      mpi_alg, mpi_alg * bus_factor, t.gw_s / t.mpi_s, t.div_s / t.mpi_s,
      static_cast<long long>(t.wrong));
  std::fflush(stdout);
}

nlohmann::json row_json(const SizeTimes& t, double bus_factor) {
  const double gw_alg = t.bytes / t.gw_s / 1e9, mpi_alg = t.bytes / t.mpi_s / 1e9;
  return {{"bytes", t.bytes},
          {"count", t.count},
          {"iterations", t.iterations},
          {"gradwire_seconds", t.gw_s},
          {"mpi_seconds", t.mpi_s},
          {"ratio", t.gw_s / t.mpi_s},
          {"gradwire_separate_divide_seconds", t.div_s},
          {"ratio_separate_divide", t.div_s / t.mpi_s},
          {"gradwire_algbw_gbps", gw_alg},
          {"gradwire_busbw_gbps", gw_alg * bus_factor},
          {"mpi_algbw_gbps", mpi_alg},
          {"mpi_busbw_gbps", mpi_alg * bus_factor},
          {"wrong", t.wrong}};
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  gw::cli::Parser app{"gradwire dense exchange vs bare MPI_Allreduce (run under mpirun)"};
  add_options(app, o);
  if (const auto code = app.parse(argc, argv)) return *code;

  gw::bench::MpiBench bench("gradwire_bench_allreduce", o.report_path, &argc, &argv);
  if (o.device == "cuda") return gw::bench::run_allreduce_on_cuda(bench, o.sizes);
  const double bus_factor = gw::bench::allreduce_bus_factor(bench.size());
  if (bench.rank() == 0) print_header(bench.size());

  nlohmann::json rows = nlohmann::json::array();
  double max_ratio_1mb = 0, max_ratio_div_1mb = 0;
  for (std::size_t bytes = o.sizes.min_bytes; bytes <= o.sizes.max_bytes; bytes *= 2) {
    const SizeTimes t = measure_size(bench, bytes, o.sizes.seconds_per_size);
    if (bytes >= (std::size_t{1} << 20)) {
      max_ratio_1mb = std::max(max_ratio_1mb, t.gw_s / t.mpi_s);
      max_ratio_div_1mb = std::max(max_ratio_div_1mb, t.div_s / t.mpi_s);
    }
    if (bench.rank() == 0) print_row(t, bus_factor);
    rows.push_back(row_json(t, bus_factor));
  }
  if (bench.rank() == 0) {
    std::printf(
        "# max ratio at or above 1 MB: %.3f (target: at most 1.05); with a separate divide "
        "pass: %.3f\n",
        max_ratio_1mb, max_ratio_div_1mb);
  }
  return bench.conclude({}, kMethod,
                        {{"busbw_factor", bus_factor},
                         {"rows", rows},
                         {"max_ratio_at_or_above_1MB", max_ratio_1mb},
                         {"max_ratio_separate_divide_at_or_above_1MB", max_ratio_div_1mb}});
}
