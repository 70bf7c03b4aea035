// gradwire_bench_overlap: how much of the gradient exchange gradwire hides behind backward, on a
// model whose backward and exchange take about the same time, measured side by side in one run.
//
//   mpirun -np 4 gradwire_bench_overlap --report overlap.json [--compute sleep|cpu]
//          [--compute-ratio 1.0] [--threshold-mb MiB] [--seconds 60]
//
// The model is ResNet-50's 161 parameter tensors (benchmarks/resnet50_shapes.h). Backward is a
// stand-in run in reverse registration order, layer by layer (a conv, a bn's weight and bias, fc's
// weight and bias); each tensor costs time in proportion to its layer's backward FLOPs at 224x224
// (conv: 2 * 2*Cout*Cin*kh*kw*Hout*Wout; bn, bias: 4*C*Hout*Wout; fc: 2 * 2*1000*2048). Two kinds:
//   sleep  (default) an accelerator's backward: the calling thread waits, using no core, until
//          each layer's deadline (start + the cumulative time of the layers so far), as a host
//          thread waits on a GPU. Deadlines are absolute, so a sleep's overshoot is not added up.
//   cpu    real work on the calling thread: 64x64x64 cblas_sgemm calls (OpenBLAS, one thread),
//          their rate measured on every rank at once at start, so under the same contention as
//          the timed runs.
// Calibration: the exchange-only step time E is measured first (median of the slowest rank) and
// the compute set to C = ratio * E (--compute-ratio). A pilot then times compute_only and
// exchange_only in rotation, as the timed run will, and rescales the compute so that the medians
// keep C = ratio * E: an exchange timed back to back, the first steps of the engine, a sleep's
// overshoot or contention for the cores would otherwise leave C and E apart.
// Four paths are then timed in rotation (Note [Rotation]; barrier, time one call on each rank; the
// slowest rank's time per iteration, then the median), so drift hits all alike:
//   compute_only   the backward stand-in alone; no gradwire call.
//   exchange_only  gradient_ready(i) for i = n-1 down to 0 at once, then step().
//   no_overlap     the backward stand-in, then gradient_ready for every tensor, then step().
//   overlapped     the backward stand-in calling gradient_ready for each layer's tensors as soon
//                  as they are computed (buckets go out on gradwire's background thread), then
//                  step().
// The inner optimizer does nothing but accept the gradient scale, so step() is the exchange.
// Ratios: overlapped / max(compute_only, exchange_only) (1 is perfect overlap), no_overlap / the
// same max, overlapped / no_overlap. The number of buckets comes from fusion::plan_buckets over
// the tensor sizes and the threshold in force. Untimed: one overlapped step with rank r's
// element j = r + 1 + (j % 5) must give the exact sum over ranks (#wrong).
#include <cblas.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "benchmarks/bench_mpi_driver.h"
#include "benchmarks/bench_workload.h"
#include "benchmarks/resnet50_shapes.h"
#include "cli/cli.h"
#include "plugin/config/params.h"
#include "plugin/distributed_optimizer.h"

namespace {

using gw::bench::time_once;
using gw::bench::Variants;

constexpr const char* kMethod =
    "ResNet-50's 161 parameter tensors; a backward stand-in in reverse registration "
    "order, layer by layer, each tensor's time proportional to its layer's backward "
    "FLOPs at 224x224; compute mode sleep = the thread sleeps until each layer's "
    "deadline (an accelerator's backward), cpu = 64x64x64 cblas_sgemm calls at a rate "
    "calibrated on all ranks at once. Calibration: exchange_only median E alone first, "
    "compute total set to compute_ratio * E, then a pilot rotating compute_only and "
    "exchange_only rescales the compute so that compute = compute_ratio * exchange in the "
    "pilot's medians. Median over rotating iterations of the slowest rank's time (barrier, then "
    "one call): compute_only = the stand-in alone; exchange_only = gradient_ready for "
    "every tensor (n-1 down to 0) then step(); no_overlap = the stand-in, then "
    "gradient_ready for every tensor, then step(); overlapped = the stand-in calling "
    "gradient_ready for each layer's tensors as it finishes them, then step(). The inner "
    "optimizer does nothing but accept the gradient scale. "
    "overlapped_vs_max_compute_exchange = overlapped / max(compute_only, exchange_only); "
    "no_overlap_vs_max_compute_exchange = no_overlap / the same max; "
    "overlapped_vs_no_overlap = overlapped / no_overlap; hidden_fraction = (no_overlap - "
    "overlapped) / min(compute_only, exchange_only). planned_buckets reproduces the "
    "fusion plan from the tensor sizes (reverse registration order, up to the threshold, "
    "a larger tensor alone). wrong: elements differing from the exact sum over ranks "
    "after one overlapped step, all ranks";

struct Options {
  std::string report_path, compute = "sleep", threshold_mb;
  double compute_ratio = 1.0, seconds = 60.0;
  int calibration_iterations = 7;
  int min_iterations = 5;
};

// The CPU stand-in's unit of work: C = A * B on 64x64 matrices (beta 0, so nothing grows).
class GemmWork {
 public:
  static constexpr int kSize = 64;
  GemmWork() : a_(kSize * kSize, 0.5f), b_(kSize * kSize, 0.25f), c_(kSize * kSize) {}
  void run(std::int64_t calls) {
    for (std::int64_t k = 0; k < calls; ++k) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kSize, kSize, kSize, 1.0f, a_.data(),
                  kSize, b_.data(), kSize, 0.0f, c_.data(), kSize);
    }
  }

 private:
  std::vector<float> a_, b_, c_;
};

// The backward stand-in: per layer, in reverse registration order, the layer's compute, then (if
// asked) gradient_ready for its tensors.
class Backward {
 public:
  Backward(const std::vector<gw::bench::ModelTensor>& tensors, bool cpu)
      : tensors_(tensors), cpu_(cpu) {
    for (const auto& t : tensors_) total_flops_ += t.backward_flops;
  }

  // Total compute `seconds`, spread over the tensors by their FLOPs; `gemm_per_second`: the CPU
  // mode's calibrated rate.
  void set_time(double seconds, double gemm_per_second) {
    seconds_ = seconds;
    gemm_per_second_ = gemm_per_second;
  }
  double seconds() const { return seconds_; }

  void run(gw::DistributedOptimizer* ready) {
    using Clock = std::chrono::steady_clock;
    const Clock::time_point start = Clock::now();
    double elapsed = 0;  // sleep: the cumulative time of the tensors so far
    double owed = 0;     // cpu: gemm calls owed, with the fraction carried to the next layer
    std::size_t i = tensors_.size();
    while (i > 0) {
      // The layer: the tensors from i-1 down that share its layer index.
      const std::size_t last = i - 1;
      std::size_t first = last;
      while (first > 0 && tensors_[first - 1].layer == tensors_[last].layer) --first;
      double layer_seconds = 0;
      for (std::size_t k = first; k <= last; ++k) {
        layer_seconds += seconds_ * tensors_[k].backward_flops / total_flops_;
      }
      if (cpu_) {
        owed += layer_seconds * gemm_per_second_;
        const auto calls = static_cast<std::int64_t>(owed);
        gemm_.run(calls);
        owed -= static_cast<double>(calls);
      } else {
        elapsed += layer_seconds;
        const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(elapsed));
        if (Clock::now() < deadline) std::this_thread::sleep_until(deadline);
      }
      if (ready) {
        for (std::size_t k = last + 1; k-- > first;) ready->gradient_ready(k);
      }
      i = first;
    }
  }

  // CPU mode: gemm calls per second of this rank while every rank runs them (~0.5 s).
  double measure_gemm_rate() {
    gemm_.run(50);  // warm-up
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    std::int64_t calls = 0;
    while (MPI_Wtime() - t0 < 0.5) {
      gemm_.run(20);
      calls += 20;
    }
    return static_cast<double>(calls) / (MPI_Wtime() - t0);
  }

 private:
  const std::vector<gw::bench::ModelTensor>& tensors_;
  bool cpu_;
  double total_flops_ = 0;
  double seconds_ = 0;
  double gemm_per_second_ = 0;
  GemmWork gemm_;
};

// The paths, in the order of the variants' table.
enum { kCompute, kExchange, kNoOverlap, kOverlapped };

struct Calibration {
  double exchange_first = 0, exchange_pilot = 0, compute_pilot = 0, target = 0, gemm_rate = 0;
};

// E alone, the compute set to ratio * E, then the pilot's correction (see the top).
Calibration calibrate(Backward& backward, const Variants& paths, const Options& o, int n,
                      const std::function<void()>& fill) {
  Calibration c;
  for (int w = 0; w < 3; ++w) time_once(paths[kExchange].run);
  c.exchange_first =
      gw::bench::rotate_medians({paths[kExchange]}, o.calibration_iterations, nullptr)[0];
  if (o.compute == "cpu") {
    c.gemm_rate = backward.measure_gemm_rate();
    // Every rank does the same work: the mean rate over ranks.
    MPI_Allreduce(MPI_IN_PLACE, &c.gemm_rate, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    c.gemm_rate /= n;
  }
  backward.set_time(o.compute_ratio * c.exchange_first, c.gemm_rate);
  fill();
  time_once(paths[kCompute].run);
  // The pilot: compute_only and exchange_only in rotation, as the timed run will have them.
  const std::vector<double> pilot = gw::bench::rotate_medians({paths[kCompute], paths[kExchange]},
                                                              o.calibration_iterations, nullptr);
  c.compute_pilot = pilot[0];
  c.exchange_pilot = pilot[1];
  c.target = o.compute_ratio * c.exchange_pilot;
  backward.set_time(backward.seconds() * c.target / c.compute_pilot, c.gemm_rate);
  return c;
}

void add_options(gw::cli::Parser& app, Options& o) {
  app.add("--report", o.report_path, "Write the JSON report here (rank 0)");
  app.add("--compute", o.compute,
          "Backward stand-in: sleep (an accelerator: the thread waits) or cpu (sgemm)")
      .one_of({"sleep", "cpu"})
      .show_default();
  app.add("--compute-ratio", o.compute_ratio,
          "Total compute time as a multiple of the measured exchange-only step time")
      .range(0.01, 100.0)
      .show_default();
  app.add("--threshold-mb", o.threshold_mb,
          "GRADWIRE_FUSION_THRESHOLD_MB for the run (default: the registry's)");
  app.add("--seconds", o.seconds,
          "Rough time budget of the timed rotation, four paths together (at least "
          "--min-iterations iterations)")
      .show_default();
  app.add("--min-iterations", o.min_iterations,
          "Fewest timed iterations (1 for a smoke run that checks sums and buckets only)")
      .range(1, 1000)
      .show_default();
  app.add("--calibration-iterations", o.calibration_iterations,
          "Iterations of each calibration measurement")
      .range(1, 1000)
      .show_default();
}

// The four paths, in the order of kCompute, kExchange, kNoOverlap, kOverlapped.
Variants make_paths(Backward& backward, gw::DistributedOptimizer& opt) {
  return {{"compute_only", [&] { backward.run(nullptr); }},
          {"exchange_only",
           [&] {
             gw::bench::all_ready(opt);
             opt.step();
           }},
          {"no_overlap",
           [&] {
             backward.run(nullptr);
             gw::bench::all_ready(opt);
             opt.step();
           }},
          {"overlapped", [&] {
             backward.run(&opt);
             opt.step();
           }}};
}

// The ratios of the paths' medians (see the top).
struct OverlapRatios {
  explicit OverlapRatios(const std::vector<double>& med)
      : floor_s(std::max(med[kCompute], med[kExchange])),
        overlapped_vs_max(med[kOverlapped] / floor_s),
        no_overlap_vs_max(med[kNoOverlap] / floor_s),
        overlapped_vs_no(med[kOverlapped] / med[kNoOverlap]),
        hidden((med[kNoOverlap] - med[kOverlapped]) / std::min(med[kCompute], med[kExchange])) {}
  double floor_s;  // max(compute_only, exchange_only)
  double overlapped_vs_max, no_overlap_vs_max, overlapped_vs_no;
  // Of the time that overlap could hide (the shorter of compute and exchange), the part hidden.
  double hidden;
};

// The run's set-up: the options, the model, the threshold in force and the buckets it plans.
struct Setup {
  const Options& o;
  std::size_t tensors;
  const gw::bench::Workload& w;
  double threshold;
  std::size_t buckets;
};

void print_summary(const Setup& r, int n, const Calibration& cal, const Variants& paths,
                   const gw::bench::Timed& timed, const OverlapRatios& x, std::int64_t wrong) {
  const Options& o = r.o;
  std::printf(
      "# gradwire_bench_overlap: %d ranks, ResNet-50 (%zu tensors, %.2f MB), compute %s, "
      "%s = %g MiB%s (%zu buckets planned)\n",
      n, r.tensors, r.w.total * 4 / 1e6, o.compute.c_str(), gw::config::keys::kFusionThresholdMb,
      r.threshold, o.threshold_mb.empty() ? " (default)" : "", r.buckets);
  std::printf(
      "# calibration: exchange-only %.2f ms alone, %.2f ms in the pilot; compute target "
      "%.2f ms (ratio %g), %.2f ms in the pilot before its correction%s\n",
      cal.exchange_first * 1e3, cal.exchange_pilot * 1e3, cal.target * 1e3, o.compute_ratio,
      cal.compute_pilot * 1e3,
      o.compute == "cpu"
          ? (", " + std::to_string(static_cast<long long>(cal.gemm_rate)) + " sgemm(64)/s per rank")
                .c_str()
          : "");
  std::printf("  %-14s %10s %10s\n", "path", "median(ms)", "/max(C,E)");
  for (std::size_t p = 0; p < paths.size(); ++p) {
    std::printf("  %-14s %10.2f %10.3f\n", paths[p].name.c_str(), timed.median[p] * 1e3,
                timed.median[p] / x.floor_s);
  }
  std::printf(
      "# iterations %d; overlapped / no_overlap %.3f; hidden %.1f%% of min(C,E); "
      "#wrong %lld\n",
      timed.iterations, x.overlapped_vs_no, 100 * x.hidden, static_cast<long long>(wrong));
}

nlohmann::json report_fields(const Setup& r, const Calibration& cal, double stand_in_seconds,
                             const Variants& paths, const gw::bench::Timed& timed,
                             const OverlapRatios& x, std::int64_t wrong) {
  const Options& o = r.o;
  return {{"compute_mode", o.compute},
          {"compute_ratio", o.compute_ratio},
          {"threshold_mb", r.threshold},
          {"threshold_source", o.threshold_mb.empty() ? "default" : "option"},
          {"planned_buckets", r.buckets},
          {"tensors", r.tensors},
          {"total_bytes", 4 * r.w.total},
          {"iterations", timed.iterations},
          {"calibration",
           {{"exchange_only_alone_seconds", cal.exchange_first},
            {"exchange_only_pilot_seconds", cal.exchange_pilot},
            {"compute_pilot_seconds", cal.compute_pilot},
            {"compute_target_seconds", cal.target},
            {"stand_in_seconds", stand_in_seconds},
            {"iterations", o.calibration_iterations},
            {"gemm_size", GemmWork::kSize},
            {"gemm_calls_per_second", cal.gemm_rate}}},
          {"seconds", gw::bench::seconds_by_name(paths, timed.median)},
          {"overlapped_vs_max_compute_exchange", x.overlapped_vs_max},
          {"no_overlap_vs_max_compute_exchange", x.no_overlap_vs_max},
          {"overlapped_vs_no_overlap", x.overlapped_vs_no},
          {"hidden_fraction", x.hidden},
          {"wrong", wrong}};
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  gw::cli::Parser app{
      "gradwire: step time with and without overlap of exchange and backward (run "
      "under mpirun)"};
  add_options(app, o);
  if (const auto code = app.parse(argc, argv)) return *code;
  openblas_set_num_threads(1);  // the stand-in's work runs on the calling thread only

  gw::bench::MpiBench bench("gradwire_bench_overlap", o.report_path, &argc, &argv);
  const int n = bench.size(), rank = bench.rank();
  const std::vector<gw::bench::ModelTensor> tensors = gw::bench::resnet50_tensors();
  gw::bench::Workload w = gw::bench::resnet50_workload();
  if (!gw::bench::resnet50_table_ok(w, rank)) return 2;

  const gw::DistributedOptimizerOptions options = gw::bench::make_options(o.threshold_mb);
  const double threshold = options.config.get_float(gw::config::keys::kFusionThresholdMb);
  const Setup setup{o, tensors.size(), w, threshold,
                    gw::bench::fusion_bucket_count(w.numels, threshold)};
  gw::DistributedOptimizer opt(bench.comm(), std::make_unique<gw::bench::NoUpdate>(true), w.specs(),
                               options);
  // Values stay bounded: every step sums n copies, so the gradients go back to 1 now and then.
  const auto fill = [&] { gw::bench::fill_gradients(opt, w, 1.0f); };
  fill();

  Backward backward(tensors, o.compute == "cpu");
  const Variants paths = make_paths(backward, opt);
  const Calibration cal = calibrate(backward, paths, o, n, fill);
  // Untimed check of the overlapped path's result.
  const std::int64_t wrong = gw::bench::count_wrong(opt, w, rank, n, paths[kOverlapped].run);
  fill();
  // One warm-up round of every path; its time sizes the run.
  const gw::bench::Timed timed = gw::bench::run_timed(paths, 1, o.seconds, o.min_iterations, fill);
  const OverlapRatios x(timed.median);

  if (rank == 0) print_summary(setup, n, cal, paths, timed, x, wrong);
  const std::vector<gw::bench::Target> targets = {
      gw::bench::at_most(gw::bench::format("overlapped / max(compute_only, exchange_only): %.3f",
                                           x.overlapped_vs_max),
                         x.overlapped_vs_max, 1.15, "overlapped_vs_max_compute_exchange_max",
                         "overlapped_met"),
      gw::bench::no_wrong_elements(wrong)};
  return bench.conclude(targets, kMethod,
                        report_fields(setup, cal, backward.seconds(), paths, timed, x, wrong));
}
