// gradwire_bench_compress --device cuda: DGC's encode of a ResNet-50-sized gradient on a CUDA
// device, against a read pass over the same buffer and an exact top-k by sorting it, side by side
// in one run (Note [Rotation]). Everything lives in the device's memory: the gradient (one bucket
// of one tensor), DGC's momentum and accumulator, the message it writes, the sort's buffers.
//   encode  DgcCompressor::encode on the stream (set_stream): momentum and accumulation, the
//           sampled top-k selection (TopkSelector's device selector), packing the pairs, zeroing
//           the sent residuals and momentum. The step, and so the selection's seed, changes every
//           repeat; the residuals carry over from repeat to repeat, as in training.
//   sort    kernels::exact_topk_by_sort: every magnitude key sorted (a radix sort), the first k.
//   read    kernels::sum_of_squares: one CUB reduction reading every element once and handing one
//           number back to the host, the shape of the host mode's read pass: the memory floor.
// Each call is timed with two Events on the stream around it (each path waits for its own result,
// so the span is the whole call). Untimed, after each encode: precision, the fraction of the
// indices DGC sent (its message decoded as a receiver decodes it) that are in the exact top-k (by
// exact_topk_by_sort, on the device) of the accumulator it selected from (the accumulator after the
// encode, with the sent values put back).
#include "benchmarks/bench_compress_device.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <iterator>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

#include "benchmarks/bench_driver.h"
#include "compressors/dgc_compressor.h"
#include "compressors/sparse_message.h"
#include "kernels/device.h"
#include "kernels/elementwise.h"
#include "kernels/sparse.h"
#include "kernels/stream.h"

namespace gw::bench {
namespace {

constexpr const char* kMethod =
    "one CUDA device, one stream; median over repeats of each path, the three paths rotating "
    "within each repeat, each call timed by CUDA events around it; encode = "
    "DgcCompressor::encode (momentum 0.9, momentum masking, one bucket of one tensor, the step "
    "and so the sampling seed = repeat number, residuals carried over); sort = "
    "kernels::exact_topk_by_sort (stable radix sort of every magnitude key, then the first k "
    "sorted by index); read_pass = kernels::sum_of_squares (one CUB reduction over the gradient, "
    "the result back on the host); precision = fraction of the sent indices in the exact top-k of "
    "the accumulator they were selected from";

// How many of the ascending `a` are in the ascending `b`.
std::size_t common_count(const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b) {
  std::size_t n = 0;
  auto j = b.begin();
  for (std::uint32_t x : a) {
    j = std::lower_bound(j, b.end(), x);
    if (j != b.end() && *j == x) ++n;
  }
  return n;
}

int run(const CompressSettings& s) {
  const kernels::Stream stream = kernels::Stream::cuda();
  const std::size_t numel = s.numel;
  compressors::DgcOptions options;
  options.sparsify.sparsity = {s.sparsity};
  options.sparsify.sample_ratio = s.sample_ratio;
  options.sparsify.min_numel = 1;  // every size of --numel is sparsified
  // The sparse path is what is measured, even where a dense exchange would move fewer bytes.
  options.sparsify.dense_fallback = false;
  compressors::DgcCompressor dgc({numel}, options);
  dgc.set_stream(stream);

  std::vector<float> host(numel);
  std::mt19937_64 rng(20240601);  // the host mode's gradient
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& x : host) x = normal(rng);
  kernels::Buffer<float> grad(numel, stream), reference(numel, stream);
  kernels::copy_bytes(grad.data(), host.data(), numel * sizeof(float), stream);
  stream.synchronize();

  compressors::BucketView bucket;
  bucket.data = grad.data();
  bucket.numel = numel;
  bucket.tensors = {{0, 0, numel}};
  const compressors::ExchangePlan plan = dgc.plan(bucket, 1);
  if (plan.sparse.size() != 1) {
    std::fprintf(stderr, "gradwire_bench_compress: internal error: DGC planned no sparse tensor\n");
    return 1;
  }
  const std::size_t k = plan.k[0];
  std::printf(
      "# gradwire_bench_compress --device cuda: %zu floats N(0,1) on CUDA device %d (%s), k = "
      "%zu, sample ratio %g, %d repeats\n",
      numel, stream.cuda_device(), kernels::cuda_device_bus_id(stream.cuda_device()).c_str(), k,
      s.sample_ratio, s.repeats);

  compressors::SparseMessageWriter message;
  message.reserve(compressors::max_message_words(plan), stream);
  compressors::EncodedBucket out;
  out.sparse = &message;
  kernels::Buffer<std::uint32_t> sort_indices(numel, stream), sort_scratch(numel, stream);
  std::int64_t step = 0;
  double checksum = 0;
  const auto encode = [&] {
    message.clear();
    dgc.begin_step(step++);
    dgc.encode(bucket, plan, 1, out);
  };
  const auto sort = [&] {
    kernels::exact_topk_by_sort(grad.data(), numel, k, sort_indices.data(), sort_scratch.data(),
                                stream);
  };
  const auto read = [&] { checksum += kernels::sum_of_squares(grad.data(), numel, stream); };

  kernels::Event start, end;
  const auto time_on_stream = [&](const std::function<void()>& fn) {
    start.record(stream);
    fn();
    end.record(stream);
    return end.elapsed_ms_since(start) * 1e-3;
  };

  double precision_min = 1.0;
  std::size_t selected_min = k, selected_max = 0;
  std::vector<std::uint32_t> sent, exact(k);
  compressors::BucketView host_bucket = bucket;  // the same layout; the data is not read
  host_bucket.data = nullptr;
  compressors::SparseSegments segments;
  // Untimed: the precision of the last encode against the exact top-k of what it selected from.
  const auto after_encode = [&](int) {
    // The message is read as a receiver reads it, on either wire (Note [Sparse message format]):
    // validated and, on the compact wire, decoded to (index, value) pairs, on the host.
    const std::vector<std::uint32_t> words = message.words();
    compressors::validate_sparse_messages(host_bucket, plan, words.data(), {words.size()},
                                          segments);
    const std::uint32_t* pairs =
        (segments.in_decoded ? segments.decoded.data() : words.data()) + segments.offset[0];
    const std::size_t count = segments.count[0];
    std::vector<float> acc = dgc.accumulator(0);  // zero where sent
    sent.resize(count);
    for (std::size_t j = 0; j < count; ++j) {
      sent[j] = pairs[2 * j];
      std::memcpy(&acc[sent[j]], &pairs[2 * j + 1], sizeof(float));
    }
    kernels::copy_bytes(reference.data(), acc.data(), numel * sizeof(float), stream);
    kernels::exact_topk_by_sort(reference.data(), numel, k, sort_indices.data(),
                                sort_scratch.data(), stream);
    kernels::copy_bytes(exact.data(), sort_indices.data(), k * sizeof(std::uint32_t), stream);
    stream.synchronize();
    precision_min =
        std::min(precision_min, count ? double(common_count(sent, exact)) / double(count) : 0.0);
    selected_min = std::min(selected_min, count);
    selected_max = std::max(selected_max, count);
  };

  // Warm-up: grows every workspace, creates the events, and starts the residuals.
  time_on_stream(encode);
  time_on_stream(sort);
  time_on_stream(read);
  const Variants variants = {{"encode", encode}, {"sort", sort}, {"read", read}};
  const std::vector<std::vector<double>> times =
      rotate(variants, s.repeats, time_on_stream, after_encode);

  std::vector<double> med;
  for (const std::vector<double>& t : times) med.push_back(median(t));
  const double encode_s = med[0], sort_s = med[1], read_s = med[2];
  const double speedup = sort_s / encode_s, vs_read = encode_s / read_s;
  const double bytes = static_cast<double>(numel) * sizeof(float);
  std::printf("  %-8s %12s %10s\n", "path", "median(ms)", "GB/s");
  for (std::size_t v = 0; v < variants.size(); ++v) {
    std::printf("  %-8s %12.3f %10.2f\n", variants[v].name.c_str(), med[v] * 1e3,
                bytes / med[v] / 1e9);
  }
  const std::vector<Target> targets = {
      at_most(format("DGC encode / read pass: %.2f", vs_read), vs_read, 2.0,
              "time_vs_read_pass_max", "time_vs_read_pass_met"),
      at_least(format("speedup vs sort: %.1fx", speedup), speedup, 20.0, "speedup_vs_sort_min",
               "speedup_vs_sort_met")};
  std::printf("# targets for an H100-class GPU:\n");
  print_verdicts(targets);
  std::printf("# precision (min over repeats) %.6f, selected %zu..%zu of k = %zu (checksum %g)\n",
              precision_min, selected_min, selected_max, k, checksum);

  const nlohmann::json report = {
      {"benchmark", "gradwire_bench_compress"},
      {"device", "cuda"},
      {"cuda_device", stream.cuda_device()},
      {"cuda_device_bus_id", kernels::cuda_device_bus_id(stream.cuda_device())},
      {"method", kMethod},
      {"numel", numel},
      {"k", k},
      {"sparsity", s.sparsity},
      {"sample_ratio", s.sample_ratio},
      {"repeats", s.repeats},
      {"encode_seconds", encode_s},
      {"sort_seconds", sort_s},
      {"read_pass_seconds", read_s},
      {"read_pass_gbps", bytes / read_s / 1e9},
      {"speedup_vs_sort", speedup},
      {"time_vs_read_pass", vs_read},
      {"precision", precision_min},
      {"selected", selected_min},
      {"selected_max", selected_max},
      {"targets", targets_json(targets)}};
  return write_report(report, s.report_path);
}

}  // namespace

int run_compress_on_cuda(const CompressSettings& settings) {
  if (!kernels::cuda_device_available()) {
    std::fprintf(stderr,
                 "gradwire_bench_compress: --device cuda: no usable CUDA device (the CUDA runtime "
                 "sees none, or gradwire was built without CUDA); --device cpu runs on the host\n");
    return 2;
  }
  try {
    return run(settings);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gradwire_bench_compress: --device cuda: %s\n", e.what());
    return 1;
  }
}

}  // namespace gw::bench
