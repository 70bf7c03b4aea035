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

compressors::DgcOptions dgc_options(const CompressSettings& s) {
  compressors::DgcOptions options;
  options.sparsify.sparsity = {s.sparsity};
  options.sparsify.sample_ratio = s.sample_ratio;
  options.sparsify.min_numel = 1;  // every size of --numel is sparsified
  // The sparse path is what is measured, even where a dense exchange would move fewer bytes.
  options.sparsify.dense_fallback = false;
  return options;
}

// DGC on one bucket of one tensor in the device's memory, the three paths over its gradient and
// the untimed check of an encode (see the top). The sort path and the check take the plan's one
// sparse tensor, which run() checks for before either runs.
class DevicePaths {
 public:
  DevicePaths(const CompressSettings& s, const kernels::Stream& stream)
      : stream_(stream),
        numel_(s.numel),
        dgc_({s.numel}, dgc_options(s)),
        grad_(s.numel, stream),
        reference_(s.numel, stream),
        sort_indices_(s.numel, stream),
        sort_scratch_(s.numel, stream) {
    dgc_.set_stream(stream_);
    const std::vector<float> host = normal_gradient(numel_);  // the host mode's gradient
    kernels::copy_bytes(grad_.data(), host.data(), numel_ * sizeof(float), stream_);
    stream_.synchronize();
    bucket_.data = grad_.data();
    bucket_.numel = numel_;
    bucket_.tensors = {{0, 0, numel_}};
    plan_ = dgc_.plan(bucket_, 1);
    check_.host_bucket = bucket_;  // the same layout; the data is not read
    check_.host_bucket.data = nullptr;
    message_.reserve(compressors::max_message_words(plan_), stream_);
    out_.sparse = &message_;
  }
  // The variants and out_ point into this object.
  DevicePaths(const DevicePaths&) = delete;
  DevicePaths& operator=(const DevicePaths&) = delete;

  const compressors::ExchangePlan& plan() const { return plan_; }
  double checksum() const { return checksum_; }

  Variants variants() {
    return {{"encode",
             [this] {
               message_.clear();
               dgc_.begin_step(step_++);
               dgc_.encode(bucket_, plan_, 1, out_);
             }},
            {"sort",
             [this] {
               kernels::exact_topk_by_sort(grad_.data(), numel_, k(), sort_indices_.data(),
                                           sort_scratch_.data(), stream_);
             }},
            {"read",
             [this] { checksum_ += kernels::sum_of_squares(grad_.data(), numel_, stream_); }}};
  }

  // The last encode's pairs: how many it sent, and how many of those are in the exact top-k of
  // the accumulator it selected from.
  struct Sent {
    std::size_t count = 0, in_exact_top_k = 0;
  };
  Sent check_last_encode() {
    // The message is read as a receiver reads it, on either wire (Note [Sparse message format]):
    // validated and, on the compact wire, decoded to (index, value) pairs, on the host.
    const std::vector<std::uint32_t> words = message_.words();
    compressors::SparseSegments& segments = check_.segments;
    compressors::validate_sparse_messages(check_.host_bucket, plan_, words.data(), {words.size()},
                                          segments);
    const std::uint32_t* pairs =
        (segments.in_decoded ? segments.decoded.data() : words.data()) + segments.offset[0];
    const std::size_t count = segments.count[0];
    std::vector<float> acc = dgc_.accumulator(0);  // zero where sent
    std::vector<std::uint32_t>& sent = check_.sent;
    sent.resize(count);
    for (std::size_t j = 0; j < count; ++j) {
      sent[j] = pairs[2 * j];
      std::memcpy(&acc[sent[j]], &pairs[2 * j + 1], sizeof(float));
    }
    kernels::copy_bytes(reference_.data(), acc.data(), numel_ * sizeof(float), stream_);
    kernels::exact_topk_by_sort(reference_.data(), numel_, k(), sort_indices_.data(),
                                sort_scratch_.data(), stream_);
    std::vector<std::uint32_t>& exact = check_.exact;
    exact.resize(k());
    kernels::copy_bytes(exact.data(), sort_indices_.data(), k() * sizeof(std::uint32_t), stream_);
    stream_.synchronize();
    return {count, common_count(sent, exact)};
  }

 private:
  std::size_t k() const { return plan_.k[0]; }

  kernels::Stream stream_;
  std::size_t numel_;
  compressors::DgcCompressor dgc_;
  kernels::Buffer<float> grad_, reference_;
  kernels::Buffer<std::uint32_t> sort_indices_, sort_scratch_;
  compressors::BucketView bucket_;
  compressors::ExchangePlan plan_;
  compressors::SparseMessageWriter message_;
  compressors::EncodedBucket out_;
  std::int64_t step_ = 0;
  double checksum_ = 0;
  // check_last_encode's own: the bucket's layout on the host, the message's segments, the sent
  // and the exact indices.
  struct {
    compressors::BucketView host_bucket;
    compressors::SparseSegments segments;
    std::vector<std::uint32_t> sent, exact;
  } check_;
};

// The worst over repeats of each encode's check.
struct Precision {
  explicit Precision(std::size_t k) : selected_min(k) {}
  double precision_min = 1.0;
  std::size_t selected_min, selected_max = 0;

  void add(const DevicePaths::Sent& sent) {
    precision_min = std::min(precision_min,
                             sent.count ? double(sent.in_exact_top_k) / double(sent.count) : 0.0);
    selected_min = std::min(selected_min, sent.count);
    selected_max = std::max(selected_max, sent.count);
  }
};

nlohmann::json device_report(const CompressSettings& s, const kernels::Stream& stream,
                             std::size_t k, const std::vector<double>& med, const Precision& p,
                             const std::vector<Target>& targets) {
  nlohmann::json report =
      compress_report(s, k, med, p.precision_min, p.selected_min, p.selected_max);
  report["device"] = "cuda";
  report["cuda_device"] = stream.cuda_device();
  report["cuda_device_bus_id"] = kernels::cuda_device_bus_id(stream.cuda_device());
  report["method"] = kMethod;
  report["sort_seconds"] = med[1];
  report["speedup_vs_sort"] = med[1] / med[0];
  report["targets"] = targets_json(targets);
  return report;
}

int run(const CompressSettings& s) {
  const kernels::Stream stream = kernels::Stream::cuda();
  DevicePaths paths(s, stream);
  if (paths.plan().sparse.size() != 1) {
    std::fprintf(stderr, "gradwire_bench_compress: internal error: DGC planned no sparse tensor\n");
    return 1;
  }
  const std::size_t k = paths.plan().k[0];
  std::printf(
      "# gradwire_bench_compress --device cuda: %zu floats N(0,1) on CUDA device %d (%s), k = "
      "%zu, sample ratio %g, %d repeats\n",
      s.numel, stream.cuda_device(), kernels::cuda_device_bus_id(stream.cuda_device()).c_str(), k,
      s.sample_ratio, s.repeats);

  kernels::Event start, end;
  const auto time_on_stream = [&](const std::function<void()>& fn) {
    start.record(stream);
    fn();
    end.record(stream);
    return end.elapsed_ms_since(start) * 1e-3;
  };
  // Warm-up: grows every workspace, creates the events, and starts the residuals.
  const Variants variants = paths.variants();
  for (const Variant& v : variants) time_on_stream(v.run);
  Precision precision(k);
  const std::vector<double> med = medians(rotate(
      variants, s.repeats, time_on_stream, [&](int) { precision.add(paths.check_last_encode()); }));

  const double speedup = med[1] / med[0], vs_read = med[0] / med[2];
  print_path_table(variants, med, static_cast<double>(s.numel) * sizeof(float));
  const std::vector<Target> targets = {
      at_most(format("DGC encode / read pass: %.2f", vs_read), vs_read, 2.0,
              "time_vs_read_pass_max", "time_vs_read_pass_met"),
      at_least(format("speedup vs sort: %.1fx", speedup), speedup, 20.0, "speedup_vs_sort_min",
               "speedup_vs_sort_met")};
  std::printf("# targets for an H100-class GPU:\n");
  print_verdicts(targets);
  std::printf("# precision (min over repeats) %.6f, selected %zu..%zu of k = %zu (checksum %g)\n",
              precision.precision_min, precision.selected_min, precision.selected_max, k,
              paths.checksum());
  return write_report(device_report(s, stream, k, med, precision, targets), s.report_path);
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
