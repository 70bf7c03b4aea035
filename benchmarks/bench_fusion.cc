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
// For each, four paths are timed in rotation (Note [Rotation]; barrier, time one call on each rank;
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
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "benchmarks/bench_mpi_driver.h"
#include "benchmarks/bench_workload.h"
#include "benchmarks/resnet50_shapes.h"
#include "cli/cli.h"
#include "plugin/config/params.h"
#include "plugin/distributed_optimizer.h"

namespace {

using gw::bench::fill_gradients;
using gw::bench::make_options;
using gw::bench::MpiBench;
using gw::bench::NoUpdate;
using gw::bench::Variants;
using gw::bench::Workload;

constexpr std::uint32_t kSmallSeed = 20240611;
const std::vector<std::string> kSweepThresholds = {"0.25", "1", "4", "8", "16", "25", "64", "128"};

constexpr const char* kMethod =
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
    "ranks";

struct Options {
  std::string report_path;
  double seconds_per_case = 20.0;
  int min_iterations = 5;
  int warm_up_rounds = 2;
  int sweep_iterations = 7;
  bool no_sweep = false;
};

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

// backward's order of readiness, then the exchange and the (empty) update.
void fused_step(gw::DistributedOptimizer& opt) {
  gw::bench::all_ready(opt);
  opt.step();
}

// The `single` path: one MPI_Allreduce of all the floats.
void single_allreduce(std::vector<float>& plain) {
  MPI_Allreduce(MPI_IN_PLACE, plain.data(), static_cast<int>(plain.size()), MPI_FLOAT, MPI_SUM,
                MPI_COMM_WORLD);
}

// The ratios the verdicts and the report take, per workload, and the wrong elements of all.
struct Ratios {
  nlohmann::json fused_vs_single = nlohmann::json::object();
  nlohmann::json per_tensor_vs_fused = nlohmann::json::object();
  nlohmann::json thr0_vs_fused = nlohmann::json::object();
  std::int64_t wrong = 0;
};

// The four paths on one workload: checks the sums, times the paths in rotation, prints the
// workload's row and returns its entry of the report.
nlohmann::json measure(Workload& w, const Options& o, const MpiBench& bench, double default_mb,
                       Ratios& ratios) {
  const std::size_t count = w.total;
  const std::size_t tensors = w.numels.size();
  std::vector<float> plain(count, 1.0f);  // per_tensor and single
  gw::DistributedOptimizer fused(bench.comm(), std::make_unique<NoUpdate>(true), w.specs(),
                                 make_options(""));
  gw::DistributedOptimizer thr0(bench.comm(), std::make_unique<NoUpdate>(true), w.specs(),
                                make_options("0"));
  std::int64_t wrong =
      gw::bench::count_wrong(fused, w, bench.rank(), bench.size(), [&] { fused_step(fused); });
  wrong += gw::bench::count_wrong(thr0, w, bench.rank(), bench.size(), [&] { fused_step(thr0); });
  ratios.wrong += wrong;

  // Values stay bounded: every call sums n copies, so all buffers go back to 1 now and then.
  const auto refill = [&] {
    fill_gradients(fused, w, 1.0f);
    fill_gradients(thr0, w, 1.0f);
    std::fill(plain.begin(), plain.end(), 1.0f);
  };
  refill();
  enum { kPerTensor, kFused, kThr0, kSingle };
  const Variants variants = {{"per_tensor",
                              [&] {
                                for (std::size_t i = tensors; i-- > 0;) {
                                  MPI_Allreduce(MPI_IN_PLACE, plain.data() + w.offsets[i],
                                                static_cast<int>(w.numels[i]), MPI_FLOAT, MPI_SUM,
                                                MPI_COMM_WORLD);
                                }
                              }},
                             {"fused", [&] { fused_step(fused); }},
                             {"gradwire_per_tensor", [&] { fused_step(thr0); }},
                             {"single", [&] { single_allreduce(plain); }}};
  // The warm-up rounds; as many iterations as the budget allows from the last (--min-iterations
  // without one).
  const gw::bench::Timed timed = gw::bench::run_timed(variants, o.warm_up_rounds,
                                                      o.seconds_per_case, o.min_iterations, refill);
  const std::vector<double>& med = timed.median;
  const std::size_t buckets = gw::bench::fusion_bucket_count(w.numels, default_mb);
  ratios.fused_vs_single[w.name] = med[kFused] / med[kSingle];
  ratios.per_tensor_vs_fused[w.name] = med[kPerTensor] / med[kFused];
  ratios.thr0_vs_fused[w.name] = med[kThr0] / med[kFused];
  if (bench.rank() == 0) {
    std::printf("  %-9s %7zu %8.2f %5d %7zu | %10.2f %10.2f %10.2f %10.2f | %12.3f %15.2f %6lld\n",
                w.name.c_str(), tensors, 4.0 * static_cast<double>(count) / 1e6, timed.iterations,
                buckets, med[kPerTensor] * 1e3, med[kFused] * 1e3, med[kThr0] * 1e3,
                med[kSingle] * 1e3, med[kFused] / med[kSingle], med[kPerTensor] / med[kFused],
                static_cast<long long>(wrong));
    std::fflush(stdout);
  }
  return {{"tensors", tensors},
          {"floats", count},
          {"total_bytes", 4 * count},
          {"smallest_tensor_bytes", 4 * *std::min_element(w.numels.begin(), w.numels.end())},
          {"largest_tensor_bytes", 4 * *std::max_element(w.numels.begin(), w.numels.end())},
          {"iterations", timed.iterations},
          {"planned_buckets_default_threshold", buckets},
          {"wrong", wrong},
          {"seconds", gw::bench::seconds_by_name(variants, med)}};
}

// The sweep on one workload: per threshold, a fresh optimizer, fused rotating with single as the
// reference. Prints a row per threshold; returns the rows, and in `best_mb` the lowest ratio's.
nlohmann::json sweep(Workload& w, int iterations, const MpiBench& bench, double& best_mb) {
  std::vector<float> plain(w.total, 1.0f);
  nlohmann::json rows = nlohmann::json::array();
  double best_ratio = 0;
  for (const std::string& mb : kSweepThresholds) {
    gw::DistributedOptimizer opt(bench.comm(), std::make_unique<NoUpdate>(true), w.specs(),
                                 make_options(mb));
    const auto refill = [&] {
      fill_gradients(opt, w, 1.0f);
      std::fill(plain.begin(), plain.end(), 1.0f);
    };
    refill();
    const Variants variants = {{"fused", [&] { fused_step(opt); }},
                               {"single", [&] { single_allreduce(plain); }}};
    gw::bench::warm_up(variants, 1);
    const std::vector<double> med = gw::bench::rotate_medians(variants, iterations, refill);
    const double fused_s = med[0], single_s = med[1];
    const std::size_t buckets = gw::bench::fusion_bucket_count(w.numels, std::stod(mb));
    if (rows.empty() || fused_s / single_s < best_ratio) {
      best_ratio = fused_s / single_s;
      best_mb = std::stod(mb);
    }
    if (bench.rank() == 0) {
      std::printf("  %-9s %8s %7zu | %10.2f %10.2f | %12.3f\n", w.name.c_str(), mb.c_str(), buckets,
                  fused_s * 1e3, single_s * 1e3, fused_s / single_s);
      std::fflush(stdout);
    }
    rows.push_back({{"threshold_mb", std::stod(mb)},
                    {"planned_buckets", buckets},
                    {"iterations", iterations},
                    {"fused_seconds", fused_s},
                    {"single_seconds", single_s},
                    {"ratio_to_single", fused_s / single_s}});
  }
  return rows;
}

void add_options(gw::cli::Parser& app, Options& o) {
  app.add("--report", o.report_path, "Write the JSON report here (rank 0)");
  app.add("--seconds-per-case", o.seconds_per_case,
          "Rough time budget per workload, all four paths together (at least "
          "--min-iterations iterations)")
      .show_default();
  app.add("--min-iterations", o.min_iterations,
          "Fewest timed iterations per workload (1 for a smoke run that checks sums only)")
      .show_default()
      .range(1, 1000);
  app.add("--warm-up-rounds", o.warm_up_rounds,
          "Untimed rounds of the four paths per workload before the timed ones (0 for a smoke "
          "run)")
      .show_default()
      .range(0, 100);
  app.add("--sweep-iterations", o.sweep_iterations, "Timed iterations per threshold of the sweep")
      .show_default()
      .range(1, 1000);
  app.add_flag("--no-sweep", o.no_sweep, "Skip the threshold sweep");
}

void print_header(int n) {
  const gw::config::ParamSpec* threshold_spec =
      gw::config::registry().find(gw::config::keys::kFusionThresholdMb);
  std::printf("# gradwire_bench_fusion: %d ranks, float32 sum; default %s = %s MiB (registry)\n", n,
              gw::config::keys::kFusionThresholdMb, threshold_spec->default_text.c_str());
  std::printf("# %-9s %7s %8s %5s %7s | %10s %10s %10s %10s | %12s %15s %6s\n", "workload",
              "tensors", "MB", "iters", "buckets", "per_tensor", "fused", "gw_thr0", "single",
              "fused/single", "per_tensor/fused", "#wrong");
  std::printf("# %-9s %7s %8s %5s %7s | %10s %10s %10s %10s |\n", "", "", "", "", "(plan)", "(ms)",
              "(ms)", "(ms)", "(ms)");
}

// The sweeps of every workload: per workload its rows in `sweeps` and the lowest ratio's
// threshold in `best_mb`.
void sweep_all(std::vector<Workload>& workloads, const Options& o, const MpiBench& bench,
               nlohmann::json& sweeps, nlohmann::json& best_mb) {
  if (bench.rank() == 0) {
    std::printf("# threshold sweep: %d iterations each, fused rotating with single\n",
                o.sweep_iterations);
    std::printf("# %-9s %8s %7s | %10s %10s | %12s\n", "workload", "MiB", "buckets", "fused(ms)",
                "single(ms)", "fused/single");
  }
  for (Workload& w : workloads) {
    double best = 0;
    sweeps[w.name] = sweep(w, o.sweep_iterations, bench, best);
    best_mb[w.name] = best;
  }
  if (bench.rank() == 0) {
    std::printf("# sweep: lowest fused/single at resnet50 %g MiB, small %g MiB\n",
                best_mb["resnet50"].get<double>(), best_mb["small"].get<double>());
  }
}

std::vector<gw::bench::Target> fusion_targets(const Ratios& ratios) {
  const double fused_resnet = ratios.fused_vs_single.at("resnet50").get<double>();
  const double fused_small = ratios.fused_vs_single.at("small").get<double>();
  const double per_small = ratios.per_tensor_vs_fused.at("small").get<double>();
  return {
      gw::bench::at_most(gw::bench::format("fused / single allreduce: resnet50 %.3f, small %.3f",
                                           fused_resnet, fused_small),
                         std::max(fused_resnet, fused_small), 1.15, "fused_vs_single_allreduce_max",
                         "fused_vs_single_met", " on both"),
      gw::bench::at_least(
          gw::bench::format("per-tensor allreduce / fused on small: %.2f", per_small), per_small,
          5.0, "per_tensor_vs_fused_small_min", "per_tensor_vs_fused_met"),
      gw::bench::no_wrong_elements(ratios.wrong)};
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  gw::cli::Parser app{
      "gradwire tensor fusion vs per-tensor and single MPI_Allreduce (run under mpirun)"};
  add_options(app, o);
  if (const auto code = app.parse(argc, argv)) return *code;

  MpiBench bench("gradwire_bench_fusion", o.report_path, &argc, &argv);
  const double default_mb = gw::config::Config().get_float(gw::config::keys::kFusionThresholdMb);
  std::vector<Workload> workloads;
  workloads.push_back(gw::bench::resnet50_workload());
  workloads.push_back(small_workload(kSmallSeed));
  if (!gw::bench::resnet50_table_ok(workloads[0], bench.rank())) return 2;

  if (bench.rank() == 0) print_header(bench.size());
  Ratios ratios;
  nlohmann::json workloads_json = nlohmann::json::object();
  for (Workload& w : workloads) workloads_json[w.name] = measure(w, o, bench, default_mb, ratios);

  nlohmann::json sweeps = nlohmann::json::object();
  nlohmann::json sweep_best = nlohmann::json::object();  // per workload: the lowest ratio's MiB
  if (!o.no_sweep) sweep_all(workloads, o, bench, sweeps, sweep_best);

  return bench.conclude(
      fusion_targets(ratios), kMethod,
      {{"default_threshold_mb", default_mb},
       {"small_workload_seed", kSmallSeed},
       {"workloads", workloads_json},
       {"fused_vs_single_allreduce", ratios.fused_vs_single},
       {"per_tensor_vs_fused", ratios.per_tensor_vs_fused},
       {"gradwire_per_tensor_vs_fused", ratios.thr0_vs_fused},
       {"threshold_sweep", o.no_sweep ? nlohmann::json(nullptr) : sweeps},
       {"threshold_sweep_iterations", o.sweep_iterations},
       {"threshold_sweep_best_mb", o.no_sweep ? nlohmann::json(nullptr) : sweep_best},
       {"wrong", ratios.wrong}});
}
