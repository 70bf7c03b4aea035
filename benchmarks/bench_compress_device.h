// gradwire_bench_compress --device cuda: DGC's encode on a CUDA device against a device read pass
// and an exact top-k by sorting on the device (bench_compress_device.cc); and what it shares with
// the host mode (bench_compress.cc): the command line, the gradient and the report's common part.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gw::bench {

// The command line of gradwire_bench_compress, shared by its host and device modes.
struct CompressSettings {
  std::string report_path;
  std::size_t numel = 25'000'000;
  double sparsity = 0.999;
  double sample_ratio = 0.01;
  int repeats = 11;
};

// The gradient both modes encode: `numel` floats drawn from N(0, 1) by a fixed-seed mt19937_64
// (bench_compress.cc).
std::vector<float> normal_gradient(std::size_t numel);

// The report's fields both modes give: the benchmark, the settings, k, the medians of the encode
// (med[0]) and the read pass (med[2]), and the worst precision and the selected counts over the
// repeats (bench_compress.cc).
nlohmann::json compress_report(const CompressSettings& s, std::size_t k,
                               const std::vector<double>& med, double precision,
                               std::size_t selected_min, std::size_t selected_max);

// The device mode; returns the exit code: 2, with a message on stderr, where no CUDA device is
// usable (a build without CUDA included).
int run_compress_on_cuda(const CompressSettings& settings);

}  // namespace gw::bench
