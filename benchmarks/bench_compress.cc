// gradwire_bench_compress: DGC's top-k encode of a ResNet-50-sized gradient (25M floats) against an
// exact top-k with std::nth_element and against one read of the same buffer, side by side in one
// run, on one thread.
//
//   gradwire_bench_compress --report compress.json [--numel 25000000] [--sparsity 0.999]
//   gradwire_bench_compress --device cuda --report compress.json   (bench_compress_device.cc)
//
// Three paths are timed in rotation (Note [Rotation]), one call each per repeat, and their medians
// compared, so drift on a shared machine hits all alike:
//   encode  gw::kernels::TopkSelector::select (sampled threshold, one streaming scan, exact cut
//           among the candidates), then packing (int32 index, float value) pairs into a
//           preallocated buffer. The seed changes every repeat (a new sample each time); the
//           gradient does not.
//   nth     exact top-k: copy (index, value) pairs into a scratch buffer (the gradient must
//           survive), std::nth_element by magnitude, pack the first k.
//   read    one streaming pass over the gradient (a 16-lane sum of its bit patterns, which the
//           compiler vectorises): the memory floor any encode must pay.
// Untimed, after each encode: the fraction of the selected that are in the exact top-k
// (precision), and the selected count.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "benchmarks/bench_compress_device.h"
#include "benchmarks/bench_driver.h"
#include "cli/cli.h"
#include "kernels/topk.h"

namespace {

struct Packed {
  std::int32_t index;
  float value;
};

// One call of `fn`, on this thread: seconds.
double time_on_clock(const std::function<void()>& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::size_t encode(gw::kernels::TopkSelector& selector, const std::vector<float>& grad,
                   std::size_t k, double sample_ratio, std::uint64_t seed,
                   std::vector<std::uint32_t>& indices, std::vector<Packed>& packed) {
  const std::size_t count =
      selector.select(grad.data(), grad.size(), k, sample_ratio, seed, indices.data());
  for (std::size_t i = 0; i < count; ++i) {
    packed[i] = {static_cast<std::int32_t>(indices[i]), grad[indices[i]]};
  }
  return count;
}

void exact_top_k(const std::vector<float>& grad, std::size_t k, std::vector<Packed>& scratch,
                 std::vector<Packed>& packed) {
  for (std::size_t i = 0; i < grad.size(); ++i) {
    scratch[i] = {static_cast<std::int32_t>(i), grad[i]};
  }
  std::nth_element(
      scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(k - 1), scratch.end(),
      [](const Packed& a, const Packed& b) { return std::fabs(a.value) > std::fabs(b.value); });
  std::copy(scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(k), packed.begin());
}

// Sum of the bit patterns, in wrapping uint32 arithmetic: an integer reduction, which g++
// vectorises at -O2/-O3 (a float sum would be a serial chain it may not reorder). Sixteen lanes,
// several vector registers of partial sums: measured 5-10% faster than one running sum, so the
// floor is not set by the loop's own dependency chain.
std::uint32_t read_pass(const std::vector<float>& grad) {
  constexpr std::size_t kLanes = 16;
  std::uint32_t lanes[kLanes] = {};
  const std::size_t n = grad.size();
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (std::size_t j = 0; j < kLanes; ++j) {
      std::uint32_t bits;
      std::memcpy(&bits, &grad[i + j], sizeof bits);
      lanes[j] += bits;
    }
  }
  std::uint32_t sum = 0;
  for (; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &grad[i], sizeof bits);
    sum += bits;
  }
  for (std::uint32_t lane : lanes) sum += lane;
  return sum;
}

struct Options {
  gw::bench::CompressSettings settings;
  std::string device = "cpu";
};

void add_options(gw::cli::Parser& app, Options& o) {
  gw::bench::CompressSettings& s = o.settings;
  app.add("--report", s.report_path, "Write the JSON report here").required();
  app.add("--numel", s.numel, "Gradient elements (ResNet-50: about 25M)")
      .show_default()
      .range(std::size_t{1}, std::size_t{4294967295});
  app.add("--sparsity", s.sparsity, "Fraction NOT sent: k = numel * (1 - sparsity)")
      .show_default()
      .range(0.0, 1.0);
  app.add("--sample-ratio", s.sample_ratio, "Fraction of the gradient sampled")
      .show_default()
      .range(1e-9, 1.0);
  app.add("--repeats", s.repeats, "Timed calls of each path").show_default().range(1, 100000);
  app.add("--device", o.device,
          "cpu: this host, one thread; cuda: DGC's encode on a CUDA device against a read "
          "pass and an exact top-k by sorting there")
      .show_default()
      .one_of({"cpu", "cuda"});
}

// The three paths' state: the gradient, the selector and the buffers each path writes, and what
// the last calls left (the encode's count, the seed, the read pass's checksum).
struct HostPaths {
  HostPaths(std::size_t numel, std::size_t k, double sample_ratio)
      : grad(gw::bench::normal_gradient(numel)),
        k(k),
        sample_ratio(sample_ratio),
        indices(k),
        packed(k),
        exact(k),
        scratch(numel) {}

  const std::vector<float> grad;
  const std::size_t k;
  const double sample_ratio;
  gw::kernels::TopkSelector selector;
  std::vector<std::uint32_t> indices;
  std::vector<Packed> packed, exact, scratch;
  std::size_t count = 0;   // selected by the last encode
  std::uint64_t seed = 0;  // the repeat number, from 1
  std::uint32_t checksum = 0;

  // One call of each path (grows the selector's workspace, faults in every page); returns the
  // exact k-th magnitude for the precision figure.
  float warm_up() {
    encode(selector, grad, k, sample_ratio, 0, indices, packed);
    exact_top_k(grad, k, scratch, exact);
    checksum = read_pass(grad);
    float kth_magnitude = std::numeric_limits<float>::infinity();
    for (const Packed& p : exact) kth_magnitude = std::min(kth_magnitude, std::fabs(p.value));
    return kth_magnitude;
  }

  gw::bench::Variants variants() {
    return {{"encode",
             [this] { count = encode(selector, grad, k, sample_ratio, ++seed, indices, packed); }},
            {"nth", [this] { exact_top_k(grad, k, scratch, exact); }},
            {"read", [this] { checksum += read_pass(grad); }}};
  }
};

// Untimed, after each repeat: the figures of its encode, the worst over repeats.
struct EncodeFigures {
  explicit EncodeFigures(std::size_t k) : selected_min(k) {}

  double precision_min = 1.0;
  std::size_t selected_min, selected_max = 0, candidates_max = 0, sample_size = 0;
  int rescans_max = 0, fallbacks = 0;

  void add(const HostPaths& p, float kth_magnitude) {
    std::size_t in_top = 0;
    for (std::size_t i = 0; i < p.count; ++i) {
      in_top += std::fabs(p.packed[i].value) >= kth_magnitude;
    }
    precision_min = std::min(precision_min, p.count ? double(in_top) / double(p.count) : 0.0);
    selected_min = std::min(selected_min, p.count);
    selected_max = std::max(selected_max, p.count);
    const gw::kernels::TopkStats& stats = p.selector.last_stats();
    rescans_max = std::max(rescans_max, stats.rescans);
    fallbacks += stats.exact_fallback;
    candidates_max = std::max(candidates_max, stats.candidates);
    sample_size = stats.sample_size;
  }
};

nlohmann::json host_report(const gw::bench::CompressSettings& s, std::size_t k,
                           const std::vector<double>& med, const EncodeFigures& f,
                           const std::vector<gw::bench::Target>& targets) {
  nlohmann::json report =
      gw::bench::compress_report(s, k, med, f.precision_min, f.selected_min, f.selected_max);
  report["method"] =
      "one thread; median over repeats of each path, the three paths rotating within each "
      "repeat; encode = TopkSelector::select (seed = repeat number, from 1) + packing (int32 "
      "index, float "
      "value) pairs; nth_element = copy (index, value) pairs + std::nth_element by |value| + "
      "packing the top k; read_pass = one vectorised pass summing the gradient's bits";
  report["nth_element_seconds"] = med[1];
  report["speedup_vs_nth_element"] = med[1] / med[0];
  report["min_count"] = gw::kernels::topk_min_count(k);
  report["sample_size"] = f.sample_size;
  report["candidates_max"] = f.candidates_max;
  report["rescans_max"] = f.rescans_max;
  report["exact_fallbacks"] = f.fallbacks;
  report["targets"] = gw::bench::targets_json(targets);
  return report;
}

// The host mode: the three paths on one thread, the table, the verdicts and the report.
int run_on_host(const gw::bench::CompressSettings& s) {
  const auto k = std::clamp<std::size_t>(
      static_cast<std::size_t>(std::llround(static_cast<double>(s.numel) * (1.0 - s.sparsity))), 1,
      s.numel);
  std::printf(
      "# gradwire_bench_compress: %zu floats N(0,1), k = %zu, sample ratio %g, %d repeats\n",
      s.numel, k, s.sample_ratio, s.repeats);

  HostPaths paths(s.numel, k, s.sample_ratio);
  const float kth_magnitude = paths.warm_up();
  EncodeFigures figures(k);
  const gw::bench::Variants variants = paths.variants();
  const std::vector<double> med = gw::bench::medians(gw::bench::rotate(
      variants, s.repeats, time_on_clock, [&](int) { figures.add(paths, kth_magnitude); }));

  const double speedup = med[1] / med[0], vs_read = med[0] / med[2];
  gw::bench::print_path_table(variants, med, static_cast<double>(s.numel) * sizeof(float));
  const std::vector<gw::bench::Target> targets = {
      gw::bench::at_least(gw::bench::format("speedup vs nth_element: %.1fx", speedup), speedup,
                          10.0, "speedup_vs_nth_element_min", "speedup_met"),
      gw::bench::at_most(gw::bench::format("encode / read pass: %.2f", vs_read), vs_read, 3.0,
                         "time_vs_read_pass_max", "time_vs_read_pass_met")};
  gw::bench::print_verdicts(targets);
  std::printf(
      "# precision (min over repeats) %.6f, selected %zu..%zu of k = %zu, max rescans %d, exact "
      "fallbacks %d, sample %zu, max candidates %zu (checksum %08x)\n",
      figures.precision_min, figures.selected_min, figures.selected_max, k, figures.rescans_max,
      figures.fallbacks, figures.sample_size, figures.candidates_max, paths.checksum);
  return gw::bench::write_report(host_report(s, k, med, figures, targets), s.report_path);
}

}  // namespace

namespace gw::bench {

std::vector<float> normal_gradient(std::size_t numel) {
  std::vector<float> grad(numel);
  std::mt19937_64 rng(20240601);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& x : grad) x = normal(rng);
  return grad;
}

nlohmann::json compress_report(const CompressSettings& s, std::size_t k,
                               const std::vector<double>& med, double precision,
                               std::size_t selected_min, std::size_t selected_max) {
  const double encode_s = med[0], read_s = med[2];
  const double bytes = static_cast<double>(s.numel) * sizeof(float);
  return {{"benchmark", "gradwire_bench_compress"},
          {"numel", s.numel},
          {"k", k},
          {"sparsity", s.sparsity},
          {"sample_ratio", s.sample_ratio},
          {"repeats", s.repeats},
          {"encode_seconds", encode_s},
          {"read_pass_seconds", read_s},
          {"read_pass_gbps", bytes / read_s / 1e9},
          {"time_vs_read_pass", encode_s / read_s},
          {"precision", precision},
          {"selected", selected_min},
          {"selected_max", selected_max}};
}

}  // namespace gw::bench

int main(int argc, char** argv) {
  Options o;
  gw::cli::Parser app{"gradwire DGC top-k encode vs exact nth_element top-k vs one read pass"};
  add_options(app, o);
  if (const auto code = app.parse(argc, argv)) return *code;
  if (o.device == "cuda") return gw::bench::run_compress_on_cuda(o.settings);
  return run_on_host(o.settings);
}
