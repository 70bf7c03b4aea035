// gradwire_bench_fusion: what tensor fusion buys, measured side by side in one run: gradwire's
// fused exchange of many gradient tensors against one bare MPI_Allreduce per tensor and against a
// single MPI_Allreduce of all of them.
//
//   mpirun -np 4 gradwire_bench_fusion --report fusion.json [--seconds-per-case 20] [--no-sweep]
//
// Two workloads of float32 gradients:
//   resnet50  the 161 parameter tensors of torchvision's ResNet-50, real shapes, registration
//             order (benchmarks/resnet50_shapes.h): 25,557,032 floats, a few large tensors and
//             many small ones.
//   small     500 tensors of 1 to 64 KB (uniform, whole floats, from a fixed-seed mt19937).
// For each, four paths are timed in rotation (barrier, time one call on each rank, per iteration;
// the slowest rank's time per iteration, then the median), so drift on a shared machine hits all
// alike:
//   per_tensor  MPI_Allreduce(MPI_IN_PLACE, MPI_SUM) of each tensor in turn, in reverse
//               registration order (the order backward finishes them): no fusion at all.
//   fused       DistributedOptimizer with GRADWIRE_FUSION_THRESHOLD_MB at its default:
//               gradient_ready(i) for i = n-1 down to 0, then step(). The inner optimizer does no
//               work but accepts the gradient scale, so step() is the exchange.
//   gw_thr0     the same with GRADWIRE_FUSION_THRESHOLD_MB=0 (gradwire, one bucket per tensor).
//   single      one MPI_Allreduce of all the floats at once: what fusion aims to match.
// Ratios: fused / single (the cost of fusion over the ideal single call) and per_tensor / fused
// (what fusion saves over the naive exchange).
// A threshold sweep follows (--no-sweep skips it): for each threshold, a fresh optimizer, a few
// iterations of fused rotating with single, and the ratio of their medians, with the number of
// buckets the threshold forms (fusion::plan_buckets), to choose the default from.
// Untimed, first: rank r fills element j of the concatenated gradients with r + 1 + (j % 5); after
// step() each must hold the sum over ranks, n(n+1)/2 + n(j % 5), exact in fp32 (#wrong).
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <istream>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "benchmarks/resnet50_shapes.h"
#include "benchmarks/bench_mpi_util.h"
#include "benchmarks/bench_report.h"
#include "plugin/comm/mpi/mpi_runtime.h"
#include "plugin/config/params.h"
#include "plugin/distributed_optimizer.h"

namespace {

using gw::bench::max_over_ranks;
using gw::bench::median;
using gw::bench::NoUpdate;
using gw::bench::time_once;
using gw::bench::verdict;

// A workload: tensor names and sizes in registration order, and one flat array of parameter
// values that every optimizer built on it shares (NoUpdate never writes them; the broadcast at
// construction writes rank 0's zeros).
struct Workload {
  std::string name;
  std::vector<std::string> names;
  std::vector<std::size_t> numels;
  std::vector<std::size_t> offsets;  // into the concatenation, registration order
  std::size_t total = 0;             // floats
  std::vector<float> values;

  void finish() {
    offsets.clear();
    total = 0;
    for (std::size_t k : numels) {
      offsets.push_back(total);
      total += k;
    }
    values.assign(total, 0.0f);
  }
  std::vector<gw::ParameterSpec> specs() {
    std::vector<gw::ParameterSpec> out;
    for (std::size_t i = 0; i < numels.size(); ++i) {
      out.push_back({names[i], values.data() + offsets[i], numels[i]});
    }
    return out;
  }
};

Workload resnet50_workload() {
  Workload w;
  w.name = "resnet50";
  for (const gw::bench::ModelTensor& t : gw::bench::resnet50_tensors()) {
    w.names.push_back(t.name);
    w.numels.push_back(t.numel);
  }
  w.finish();
  return w;
}

// 500 tensors of 1 to 64 KB. The draw maps mt19937's output (the same on every standard library)
// onto [256, 16384] floats by a modulo, whose bias (2^32 / 16129 values) is negligible, rather
// than std::uniform_int_distribution, whose algorithm is the library's own.
Workload small_workload(std::uint32_t seed) {
  Workload w;
  w.name = "small";
  std::mt19937 rng(seed);
  const std::uint32_t lo = 1024 / 4, hi = 65536 / 4;
  for (int i = 0; i < 500; ++i) {
    w.names.push_back("t" + std::to_string(i));
    w.numels.push_back(lo + rng() % (hi - lo + 1));
  }
  w.finish();
  return w;
}

gw::DistributedOptimizerOptions make_options(const std::string& threshold_mb) {
  gw::DistributedOptimizerOptions o;
  o.read_environment = false;
  o.config.set(gw::config::keys::kLogLevel, "warn");
  // Empty: the registry's default, as a user who sets nothing gets.
  if (!threshold_mb.empty()) o.config.set(gw::config::keys::kFusionThresholdMb, threshold_mb);
  return o;
}

// backward's order of readiness, then the exchange and the (empty) update.
void fused_step(gw::DistributedOptimizer& opt) {
  for (std::size_t i = opt.num_parameters(); i-- > 0;) opt.gradient_ready(i);
  opt.step();
}

// Elements wrong after one fused step of the verification pattern, summed over ranks.
std::int64_t check_sum(gw::DistributedOptimizer& opt, const Workload& w, int rank, int n) {
  for (std::size_t i = 0; i < w.numels.size(); ++i) {
    float* g = opt.gradient(i);
    for (std::size_t e = 0; e < w.numels[i]; ++e) {
      g[e] = static_cast<float>(rank + 1 + (w.offsets[i] + e) % 5);
    }
  }
  fused_step(opt);
  std::int64_t wrong = 0;
  for (std::size_t i = 0; i < w.numels.size(); ++i) {
    const float* g = opt.gradient(i);
    for (std::size_t e = 0; e < w.numels[i]; ++e) {
      const double want = n * (n + 1) / 2.0 + n * static_cast<double>((w.offsets[i] + e) % 5);
      wrong += g[e] != static_cast<float>(want);
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return wrong;
}

// Every gradient to `v`, view by view (the bench does not rely on the views being one buffer).
void fill_gradients(gw::DistributedOptimizer& opt, const Workload& w, float v) {
  for (std::size_t i = 0; i < w.numels.size(); ++i) {
    std::fill(opt.gradient(i), opt.gradient(i) + w.numels[i], v);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string report_path;
  double seconds_per_case = 20.0;
  int min_iterations = 5;
  int sweep_iterations = 7;
  bool no_sweep = false;
  CLI::App app{"gradwire tensor fusion vs per-tensor and single MPI_Allreduce (run under mpirun)"};
  app.add_option("--report", report_path, "Write the JSON report here (rank 0)");
  app.add_option("--seconds-per-case", seconds_per_case,
                 "Rough time budget per workload, all four paths together (at least "
                 "--min-iterations iterations)")
      ->capture_default_str();
  app.add_option("--min-iterations", min_iterations,
                 "Fewest timed iterations per workload (1 for a smoke run that checks sums only)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_option("--sweep-iterations", sweep_iterations,
                 "Timed iterations per threshold of the sweep")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_flag("--no-sweep", no_sweep, "Skip the threshold sweep");
  CLI11_PARSE(app, argc, argv);

  gw::MpiRuntime mpi(&argc, &argv);
  auto comm = std::make_shared<gw::CountingCommunicator>(gw::make_mpi_world_communicator());
  const int n = comm->size(), rank = comm->rank();

  const gw::config::ParamSpec* threshold_spec =
      gw::config::registry().find(gw::config::keys::kFusionThresholdMb);
  const std::string default_text = threshold_spec->default_text;
  const double default_mb = gw::config::Config().get_float(gw::config::keys::kFusionThresholdMb);

  constexpr std::uint32_t kSmallSeed = 20240611;
  std::vector<Workload> workloads;
  workloads.push_back(resnet50_workload());
  workloads.push_back(small_workload(kSmallSeed));
  if (workloads[0].numels.size() != gw::bench::kResnet50Tensors ||
      workloads[0].total != gw::bench::kResnet50Numel) {
    if (rank == 0) {
      std::fprintf(stderr, "ResNet-50 table: %zu tensors, %zu floats (want %zu, %zu)\n",
                   workloads[0].numels.size(), workloads[0].total, gw::bench::kResnet50Tensors,
                   gw::bench::kResnet50Numel);
    }
    return 2;
  }

  if (rank == 0) {
    std::printf(
        "# gradwire_bench_fusion: %d ranks, float32 sum; default %s = %s MiB (registry)\n", n,
        gw::config::keys::kFusionThresholdMb, default_text.c_str());
    std::printf("# %-9s %7s %8s %5s %7s | %10s %10s %10s %10s | %12s %15s %6s\n", "workload",
                "tensors", "MB", "iters", "buckets", "per_tensor", "fused", "gw_thr0", "single",
                "fused/single", "per_tensor/fused", "#wrong");
    std::printf("# %-9s %7s %8s %5s %7s | %10s %10s %10s %10s |\n", "", "", "", "", "(plan)",
                "(ms)", "(ms)", "(ms)", "(ms)");
  }

  nlohmann::json workloads_json = nlohmann::json::object();
  nlohmann::json fused_vs_single = nlohmann::json::object();
  nlohmann::json per_tensor_vs_fused = nlohmann::json::object();
  nlohmann::json thr0_vs_fused = nlohmann::json::object();
  std::int64_t wrong_total = 0;
  for (Workload& w : workloads) {
    const std::size_t count = w.total;
    const std::size_t tensors = w.numels.size();
    std::vector<float> plain(count, 1.0f);  // per_tensor and single
    const auto per_tensor = [&] {
      for (std::size_t i = tensors; i-- > 0;) {
        MPI_Allreduce(MPI_IN_PLACE, plain.data() + w.offsets[i], static_cast<int>(w.numels[i]),
                      MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      }
    };
    const auto single = [&] {
      MPI_Allreduce(MPI_IN_PLACE, plain.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
    };

    gw::DistributedOptimizer fused(comm, std::make_unique<NoUpdate>(true), w.specs(),
                                   make_options(""));
    gw::DistributedOptimizer thr0(comm, std::make_unique<NoUpdate>(true), w.specs(),
                                  make_options("0"));
    const std::int64_t wrong = check_sum(fused, w, rank, n) + check_sum(thr0, w, rank, n);
    wrong_total += wrong;

    // Values stay bounded: every call sums n copies, so all buffers go back to 1 now and then.
    const auto refill = [&] {
      fill_gradients(fused, w, 1.0f);
      fill_gradients(thr0, w, 1.0f);
      std::fill(plain.begin(), plain.end(), 1.0f);
    };
    refill();
    const std::vector<std::function<void()>> paths = {
        per_tensor, [&] { fused_step(fused); }, [&] { fused_step(thr0); }, single};
    const std::size_t num_paths = paths.size();

    // Warm-up, then as many iterations as the budget allows from the warm-up's second round.
    double round = 0;
    for (int warm = 0; warm < 2; ++warm) {
      round = 0;
      for (const auto& p : paths) round += time_once(p);
    }
    MPI_Allreduce(MPI_IN_PLACE, &round, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    const int iters =
        std::clamp(static_cast<int>(seconds_per_case / (round + 1e-9)), min_iterations, 1000);

    std::vector<std::vector<double>> t(num_paths, std::vector<double>(iters));
    refill();
    for (int it = 0; it < iters; ++it) {
      // Rotate which goes first so none always follows the same one.
      for (std::size_t k = 0; k < num_paths; ++k) {
        const std::size_t side = (it + k) % num_paths;
        t[side][it] = time_once(paths[side]);
      }
      if (it % 8 == 7) refill();
    }
    std::vector<double> med;
    for (auto& ts : t) med.push_back(median(max_over_ranks(ts)));
    const double per_s = med[0], fused_s = med[1], thr0_s = med[2], single_s = med[3];
    const std::size_t buckets = gw::bench::fusion_bucket_count(w.numels, default_mb);
    const double bytes = 4.0 * static_cast<double>(count);
    fused_vs_single[w.name] = fused_s / single_s;
    per_tensor_vs_fused[w.name] = per_s / fused_s;
    thr0_vs_fused[w.name] = thr0_s / fused_s;
    if (rank == 0) {
      std::printf("  %-9s %7zu %8.2f %5d %7zu | %10.2f %10.2f %10.2f %10.2f | %12.3f %15.2f %6lld\n",
                  w.name.c_str(), tensors, bytes / 1e6, iters, buckets, per_s * 1e3,
                  fused_s * 1e3, thr0_s * 1e3, single_s * 1e3, fused_s / single_s,
                  per_s / fused_s, static_cast<long long>(wrong));
      std::fflush(stdout);
    }
    workloads_json[w.name] = {{"tensors", tensors},
                              {"floats", count},
                              {"total_bytes", 4 * count},
                              {"smallest_tensor_bytes",
                               4 * *std::min_element(w.numels.begin(), w.numels.end())},
                              {"largest_tensor_bytes",
                               4 * *std::max_element(w.numels.begin(), w.numels.end())},
                              {"iterations", iters},
                              {"planned_buckets_default_threshold", buckets},
                              {"wrong", wrong},
                              {"seconds",
                               {{"per_tensor", per_s},
                                {"fused", fused_s},
                                {"gradwire_per_tensor", thr0_s},
                                {"single", single_s}}}};
  }

  // The sweep: one fresh optimizer per threshold, fused rotating with single as the reference.
  const std::vector<std::string> sweep_thresholds = {"0.25", "1", "4", "8", "16", "25", "64",
                                                     "128"};
  nlohmann::json sweep = nlohmann::json::object();
  nlohmann::json sweep_best = nlohmann::json::object();  // per workload: the lowest ratio's MiB
  if (!no_sweep) {
    if (rank == 0) {
      std::printf("# threshold sweep: %d iterations each, fused rotating with single\n",
                  sweep_iterations);
      std::printf("# %-9s %8s %7s | %10s %10s | %12s\n", "workload", "MiB", "buckets",
                  "fused(ms)", "single(ms)", "fused/single");
    }
    for (Workload& w : workloads) {
      std::vector<float> plain(w.total, 1.0f);
      nlohmann::json rows = nlohmann::json::array();
      double best_mb = 0, best_ratio = 0;
      for (const std::string& mb : sweep_thresholds) {
        gw::DistributedOptimizer opt(comm, std::make_unique<NoUpdate>(true), w.specs(),
                                     make_options(mb));
        fill_gradients(opt, w, 1.0f);
        std::fill(plain.begin(), plain.end(), 1.0f);
        const std::vector<std::function<void()>> paths = {
            [&] { fused_step(opt); },
            [&] {
              MPI_Allreduce(MPI_IN_PLACE, plain.data(), static_cast<int>(w.total), MPI_FLOAT,
                            MPI_SUM, MPI_COMM_WORLD);
            }};
        for (const auto& p : paths) time_once(p);  // warm-up
        std::vector<double> t_fused(sweep_iterations), t_single(sweep_iterations);
        for (int it = 0; it < sweep_iterations; ++it) {
          for (std::size_t k = 0; k < 2; ++k) {
            const std::size_t side = (it + k) % 2;
            (side == 0 ? t_fused : t_single)[it] = time_once(paths[side]);
          }
          if (it % 8 == 7) {
            fill_gradients(opt, w, 1.0f);
            std::fill(plain.begin(), plain.end(), 1.0f);
          }
        }
        const double fused_s = median(max_over_ranks(t_fused));
        const double single_s = median(max_over_ranks(t_single));
        const std::size_t buckets = gw::bench::fusion_bucket_count(w.numels, std::stod(mb));
        if (rows.empty() || fused_s / single_s < best_ratio) {
          best_ratio = fused_s / single_s;
          best_mb = std::stod(mb);
        }
        if (rank == 0) {
          std::printf("  %-9s %8s %7zu | %10.2f %10.2f | %12.3f\n", w.name.c_str(), mb.c_str(),
                      buckets, fused_s * 1e3, single_s * 1e3, fused_s / single_s);
          std::fflush(stdout);
        }
        rows.push_back({{"threshold_mb", std::stod(mb)},
                        {"planned_buckets", buckets},
                        {"iterations", sweep_iterations},
                        {"fused_seconds", fused_s},
                        {"single_seconds", single_s},
                        {"ratio_to_single", fused_s / single_s}});
      }
      sweep[w.name] = rows;
      sweep_best[w.name] = best_mb;
    }
    if (rank == 0) {
      std::printf("# sweep: lowest fused/single at resnet50 %g MiB, small %g MiB\n",
                  sweep_best["resnet50"].get<double>(), sweep_best["small"].get<double>());
    }
  }

  const double fused_max = std::max(fused_vs_single["resnet50"].get<double>(),
                                    fused_vs_single["small"].get<double>());
  const double per_small = per_tensor_vs_fused["small"].get<double>();
  const bool fused_ok = fused_max <= 1.15, per_ok = per_small >= 5.0, wrong_ok = wrong_total == 0;
  if (rank == 0) {
    std::printf("# fused / single allreduce: resnet50 %.3f, small %.3f (target: at most 1.15 on "
                "both) %s\n",
                fused_vs_single["resnet50"].get<double>(), fused_vs_single["small"].get<double>(),
                verdict(fused_ok));
    std::printf("# per-tensor allreduce / fused on small: %.2f (target: at least 5) %s\n",
                per_small, verdict(per_ok));
    std::printf("# wrong elements: %lld (target: 0) %s\n", static_cast<long long>(wrong_total),
                verdict(wrong_ok));
    if (!report_path.empty()) {
      nlohmann::json report = {
          {"benchmark", "gradwire_bench_fusion"},
          {"world_size", n},
          {"method",
           "median over rotating iterations of the slowest rank's time (barrier, then one call); "
           "per_tensor = one MPI_Allreduce(MPI_IN_PLACE, MPI_SUM) per tensor in reverse "
           "registration order; fused = DistributedOptimizer with GRADWIRE_FUSION_THRESHOLD_MB "
           "at its default, gradient_ready(i) for i = n-1 down to 0, then step(), with an inner "
           "optimizer that does nothing but accepts the gradient scale (step() is the exchange); "
           "gradwire_per_tensor = the same with the threshold at 0 (one bucket per tensor); "
           "single = one MPI_Allreduce of all the floats. fused_vs_single_allreduce = fused / "
           "single; per_tensor_vs_fused = per_tensor / fused; gradwire_per_tensor_vs_fused = "
           "gradwire_per_tensor / fused. threshold_sweep: a fresh optimizer per threshold, "
           "fused rotating with single, ratio_to_single = fused / single medians; "
           "planned_buckets reproduces the fusion plan from the tensor sizes (reverse "
           "registration order, up to the threshold, a larger tensor alone). wrong: elements "
           "differing from the exact sum over ranks after one fused step, both optimizers, all "
           "ranks"},
          {"default_threshold_mb", default_mb},
          {"small_workload_seed", kSmallSeed},
          {"workloads", workloads_json},
          {"fused_vs_single_allreduce", fused_vs_single},
          {"per_tensor_vs_fused", per_tensor_vs_fused},
          {"gradwire_per_tensor_vs_fused", thr0_vs_fused},
          {"threshold_sweep", no_sweep ? nlohmann::json(nullptr) : sweep},
          {"threshold_sweep_iterations", sweep_iterations},
          {"threshold_sweep_best_mb", no_sweep ? nlohmann::json(nullptr) : sweep_best},
          {"wrong", wrong_total},
          {"targets",
           {{"fused_vs_single_allreduce_max", 1.15},
            {"per_tensor_vs_fused_small_min", 5.0},
            {"fused_vs_single_met", fused_ok},
            {"per_tensor_vs_fused_met", per_ok},
            {"wrong_met", wrong_ok}}}};
      if (const int rc = gw::bench::write_report(report, report_path); rc != 0) return rc;
    }
  }
  return 0;
}
