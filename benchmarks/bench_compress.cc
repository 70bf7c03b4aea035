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

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "benchmarks/bench_compress_device.h"
#include "benchmarks/bench_driver.h"
#include "kernels/topk.h"

namespace {

using gw::bench::median;

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

}  // namespace

int main(int argc, char** argv) {
  std::string report_path;
  std::size_t numel = 25'000'000;
  double sparsity = 0.999, sample_ratio = 0.01;
  int repeats = 11;
  std::string device = "cpu";
  CLI::App app{"gradwire DGC top-k encode vs exact nth_element top-k vs one read pass"};
  app.add_option("--report", report_path, "Write the JSON report here")->required();
  app.add_option("--numel", numel, "Gradient elements (ResNet-50: about 25M)")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{4294967295}));
  app.add_option("--sparsity", sparsity, "Fraction NOT sent: k = numel * (1 - sparsity)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--sample-ratio", sample_ratio, "Fraction of the gradient sampled")
      ->capture_default_str()
      ->check(CLI::Range(1e-9, 1.0));
  app.add_option("--repeats", repeats, "Timed calls of each path")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--device", device,
                 "cpu: this host, one thread; cuda: DGC's encode on a CUDA device against a read "
                 "pass and an exact top-k by sorting there")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "cuda"}));
  CLI11_PARSE(app, argc, argv);
  if (device == "cuda") {
    return gw::bench::run_compress_on_cuda({report_path, numel, sparsity, sample_ratio, repeats});
  }

  const auto k = std::clamp<std::size_t>(
      static_cast<std::size_t>(std::llround(static_cast<double>(numel) * (1.0 - sparsity))), 1,
      numel);
  std::printf(
      "# gradwire_bench_compress: %zu floats N(0,1), k = %zu, sample ratio %g, %d repeats\n", numel,
      k, sample_ratio, repeats);

  std::vector<float> grad(numel);
  std::mt19937_64 rng(20240601);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& x : grad) x = normal(rng);

  gw::kernels::TopkSelector selector;
  std::vector<std::uint32_t> indices(k);
  std::vector<Packed> packed(k), exact(k), scratch(numel);

  // Warm-up (grows the selector's workspace, faults in every page), and the exact k-th
  // magnitude for the precision figure.
  encode(selector, grad, k, sample_ratio, 0, indices, packed);
  exact_top_k(grad, k, scratch, exact);
  std::uint32_t checksum = read_pass(grad);
  float kth_magnitude = std::numeric_limits<float>::infinity();
  for (const Packed& p : exact) kth_magnitude = std::min(kth_magnitude, std::fabs(p.value));

  double precision_min = 1.0;
  std::size_t selected_min = k, selected_max = 0, candidates_max = 0, sample_size = 0;
  int rescans_max = 0, fallbacks = 0;
  std::size_t count = 0;   // selected by the last encode
  std::uint64_t seed = 0;  // the repeat number, from 1
  const gw::bench::Variants variants = {
      {"encode",
       [&] { count = encode(selector, grad, k, sample_ratio, ++seed, indices, packed); }},
      {"nth", [&] { exact_top_k(grad, k, scratch, exact); }},
      {"read", [&] { checksum += read_pass(grad); }}};
  // Untimed, after each repeat: the figures of its encode.
  const auto after_encode = [&](int) {
    std::size_t in_top = 0;
    for (std::size_t i = 0; i < count; ++i) in_top += std::fabs(packed[i].value) >= kth_magnitude;
    precision_min = std::min(precision_min, count ? double(in_top) / double(count) : 0.0);
    selected_min = std::min(selected_min, count);
    selected_max = std::max(selected_max, count);
    const gw::kernels::TopkStats& stats = selector.last_stats();
    rescans_max = std::max(rescans_max, stats.rescans);
    fallbacks += stats.exact_fallback;
    candidates_max = std::max(candidates_max, stats.candidates);
    sample_size = stats.sample_size;
  };
  const std::vector<std::vector<double>> times =
      gw::bench::rotate(variants, repeats, time_on_clock, after_encode);

  std::vector<double> med;
  for (const std::vector<double>& t : times) med.push_back(median(t));
  const double encode_s = med[0], nth_s = med[1], read_s = med[2];
  const double speedup = nth_s / encode_s, vs_read = encode_s / read_s;
  const double bytes = static_cast<double>(numel) * sizeof(float);
  std::printf("  %-8s %12s %10s\n", "path", "median(ms)", "GB/s");
  for (std::size_t v = 0; v < variants.size(); ++v) {
    std::printf("  %-8s %12.3f %10.2f\n", variants[v].name.c_str(), med[v] * 1e3,
                bytes / med[v] / 1e9);
  }
  const std::vector<gw::bench::Target> targets = {
      gw::bench::at_least(gw::bench::format("speedup vs nth_element: %.1fx", speedup), speedup,
                          10.0, "speedup_vs_nth_element_min", "speedup_met"),
      gw::bench::at_most(gw::bench::format("encode / read pass: %.2f", vs_read), vs_read, 3.0,
                         "time_vs_read_pass_max", "time_vs_read_pass_met")};
  gw::bench::print_verdicts(targets);
  std::printf(
      "# precision (min over repeats) %.6f, selected %zu..%zu of k = %zu, max rescans %d, exact "
      "fallbacks %d, sample %zu, max candidates %zu (checksum %08x)\n",
      precision_min, selected_min, selected_max, k, rescans_max, fallbacks, sample_size,
      candidates_max, checksum);

  nlohmann::json report = {
      {"benchmark", "gradwire_bench_compress"},
      {"method",
       "one thread; median over repeats of each path, the three paths rotating within each "
       "repeat; encode = TopkSelector::select (seed = repeat number, from 1) + packing (int32 "
       "index, float "
       "value) pairs; nth_element = copy (index, value) pairs + std::nth_element by |value| + "
       "packing the top k; read_pass = one vectorised pass summing the gradient's bits"},
      {"numel", numel},
      {"k", k},
      {"sparsity", sparsity},
      {"sample_ratio", sample_ratio},
      {"repeats", repeats},
      {"encode_seconds", encode_s},
      {"nth_element_seconds", nth_s},
      {"read_pass_seconds", read_s},
      {"read_pass_gbps", bytes / read_s / 1e9},
      {"speedup_vs_nth_element", speedup},
      {"time_vs_read_pass", vs_read},
      {"precision", precision_min},
      {"selected", selected_min},
      {"selected_max", selected_max},
      {"min_count", gw::kernels::topk_min_count(k)},
      {"sample_size", sample_size},
      {"candidates_max", candidates_max},
      {"rescans_max", rescans_max},
      {"exact_fallbacks", fallbacks},
      {"targets", gw::bench::targets_json(targets)}};
  return gw::bench::write_report(report, report_path);
}
