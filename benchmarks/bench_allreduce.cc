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

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "benchmarks/bench_allreduce_device.h"
#include "benchmarks/bench_mpi_driver.h"
#include "benchmarks/bench_workload.h"
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

}  // namespace

int main(int argc, char** argv) {
  std::string report_path;
  std::size_t min_bytes = 4096, max_bytes = std::size_t{64} << 20;
  double seconds_per_size = 1.0;
  std::string device = "cpu";
  CLI::App app{"gradwire dense exchange vs bare MPI_Allreduce (run under mpirun)"};
  app.add_option("--report", report_path, "Write the JSON report here (rank 0)");
  app.add_option("--min-bytes", min_bytes)->capture_default_str();
  app.add_option("--max-bytes", max_bytes)->capture_default_str();
  app.add_option("--seconds-per-size", seconds_per_size,
                 "Rough time budget per size (both sides together)")
      ->capture_default_str();
  app.add_option("--device", device,
                 "cpu: host buffers, gradwire's DistributedOptimizer vs MPI_Allreduce; cuda: CUDA "
                 "device buffers, gradwire's communicator vs the bare ncclAllReduce or "
                 "MPI_Allreduce")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "cuda"}));
  CLI11_PARSE(app, argc, argv);

  gw::bench::MpiBench bench("gradwire_bench_allreduce", report_path, &argc, &argv);
  if (device == "cuda") {
    return gw::bench::run_allreduce_on_cuda(bench, {min_bytes, max_bytes, seconds_per_size});
  }
  const int n = bench.size(), rank = bench.rank();
  const double bus_factor = n > 1 ? 2.0 * (n - 1) / n : 0.0;

  if (rank == 0) {
    std::printf("# gradwire_bench_allreduce: %d ranks, float32, sum then average\n", n);
    std::printf("# %12s %10s | %10s %8s %8s | %10s | %10s %8s %8s | %6s %8s %6s\n", "size(B)",
                "count", "gw(us)", "algbw", "busbw", "gw+div(us)", "mpi(us)", "algbw", "busbw",
                "ratio", "ratio+div", "#wrong");
  }
  nlohmann::json rows = nlohmann::json::array();
  double max_ratio_1mb = 0, max_ratio_div_1mb = 0;
  for (std::size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
    const std::size_t count = bytes / sizeof(float);
    std::vector<float> param(count, 0.0f), plain(count);
    const gw::DistributedOptimizerOptions options = gw::bench::make_options("");
    gw::DistributedOptimizer opt(bench.comm(), std::make_unique<NoUpdate>(true),
                                 {{"flat", param.data(), count}}, options);
    gw::DistributedOptimizer opt_div(bench.comm(), std::make_unique<NoUpdate>(false),
                                     {{"flat", param.data(), count}}, options);
    float* grad = opt.gradient(0);
    std::fill(opt_div.gradient(0), opt_div.gradient(0) + count, 1.0f);

    // Verification, untimed: rank r contributes r + 1 + (i % 5); the average is exact in fp32.
    for (std::size_t i = 0; i < count; ++i) grad[i] = static_cast<float>(rank + 1 + i % 5);
    opt.synchronize_gradients();
    std::int64_t wrong = 0;
    for (std::size_t i = 0; i < count; ++i) {
      wrong += grad[i] != static_cast<float>((n + 1) / 2.0 + i % 5);
    }
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);

    std::fill(grad, grad + count, 1.0f);
    std::fill(plain.begin(), plain.end(), 1.0f);
    enum { kGw, kDiv, kMpi };
    const gw::bench::Variants variants = {
        {"gw", [&] { opt.step(); }},
        {"gw+div", [&] { opt_div.synchronize_gradients(); }},
        {"mpi", [&] {
           MPI_Allreduce(MPI_IN_PLACE, plain.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                         MPI_COMM_WORLD);
         }}};
    // Warm-up, then iterations sized to the budget from one timed call of the bare allreduce.
    gw::bench::warm_up(variants, 3);
    const double probe = gw::bench::slowest(gw::bench::time_once(variants[kMpi].run));
    const int iters = std::clamp(static_cast<int>(seconds_per_size / (3 * probe + 1e-6)), 5, 2000);
    // Keep the values bounded: every call sums n copies.
    const std::vector<double> med = gw::bench::rotate_medians(variants, iters, [&] {
      std::fill(grad, grad + count, 1.0f);
      std::fill(plain.begin(), plain.end(), 1.0f);
    });
    const double gw_s = med[kGw], div_s = med[kDiv], mpi_s = med[kMpi];
    const double ratio = gw_s / mpi_s, ratio_div = div_s / mpi_s;
    if (bytes >= (std::size_t{1} << 20)) {
      max_ratio_1mb = std::max(max_ratio_1mb, ratio);
      max_ratio_div_1mb = std::max(max_ratio_div_1mb, ratio_div);
    }
    const double gw_alg = bytes / gw_s / 1e9, mpi_alg = bytes / mpi_s / 1e9;
    if (rank == 0) {
      std::printf(
          "  %12zu %10zu | %10.1f %8.3f %8.3f | %10.1f | %10.1f %8.3f %8.3f | %6.3f %8.3f %6lld\n",
          bytes, count, gw_s * 1e6, gw_alg, gw_alg * bus_factor, div_s * 1e6, mpi_s * 1e6, mpi_alg,
          mpi_alg * bus_factor, ratio, ratio_div, static_cast<long long>(wrong));
      std::fflush(stdout);
    }
    rows.push_back({{"bytes", bytes},
                    {"count", count},
                    {"iterations", iters},
                    {"gradwire_seconds", gw_s},
                    {"mpi_seconds", mpi_s},
                    {"ratio", ratio},
                    {"gradwire_separate_divide_seconds", div_s},
                    {"ratio_separate_divide", ratio_div},
                    {"gradwire_algbw_gbps", gw_alg},
                    {"gradwire_busbw_gbps", gw_alg * bus_factor},
                    {"mpi_algbw_gbps", mpi_alg},
                    {"mpi_busbw_gbps", mpi_alg * bus_factor},
                    {"wrong", wrong}});
  }
  if (rank == 0) {
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
