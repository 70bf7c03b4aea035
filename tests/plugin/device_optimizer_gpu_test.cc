// DistributedOptimizer on a CUDA stream (Note [The step on a device]) against the same run on the
// host: the same parameters after every step, bit for bit, for every strategy, at 1 rank and at
// 2 ranks sharing one GPU (MPI staging the device buffers). The step runs the same code on both
// (Note [Compressors on a stream]) and the primitives promise the host's arithmetic, so nothing
// here needs a tolerance; dgc's and topk's residual state equal on both also says they selected
// the same indices. And the timeline shows the device's times. Skips without a GPU (the binary
// then shows as skipped, not passed).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "compressors/sparse_message.h"
#include "kernels/device.h"
#include "kernels/elementwise.h"
#include "kernels/stream.h"
#include "plugin_test_util.h"

namespace gw {
namespace {

using config::keys::kAmp;
using config::keys::kCompressor;
using config::keys::kDgcMinNumel;
using config::keys::kDgcSparsity;
using config::keys::kLocalSgdK;
using config::keys::kSync;
using testing::Settings;
using testing::settings;
using testing::with;
using testing::world;

// Plain SGD that runs where its stream works: w += (-lr * scale) g, one axpy per parameter. It
// hands DGC a momentum of 0.9 to take over, and steps without momentum afterwards.
class StreamSgd : public Optimizer {
 public:
  explicit StreamSgd(kernels::Stream stream) : stream_(std::move(stream)) {}
  std::string name() const override { return "stream-sgd"; }
  void step(const std::vector<ParameterView>& params) override {
    for (const ParameterView& p : params) {
      kernels::axpy(-0.05f * p.grad_scale, p.grad, p.value, p.numel, stream_);
    }
    stream_.synchronize();
  }
  bool accepts_gradient_scale() const override { return true; }
  std::optional<SgdMomentum> sgd_momentum() const override { return SgdMomentum{0.9, false}; }
  void release_momentum() override {}
  double learning_rate() const override { return 0.05; }
  void set_learning_rate(double) override {}
  void save_state(std::ostream&) const override {}
  void load_state(std::istream&) override {}

 private:
  kernels::Stream stream_;
};

constexpr std::size_t kNumels[] = {20000, 3000, 7};
constexpr std::size_t kRows[] = {100, 30, 0};  // matrices [100, 200] and [30, 100], for powersgd
constexpr int kSteps = 6;

struct TrainingRun {
  std::vector<std::vector<float>> params;  // after each step, flattened
  std::vector<std::string> state;          // the optimizer's saved state after the run
};

// kSteps steps of `s` with the parameters and gradients where `stream` works.
TrainingRun train(const Settings& s, const kernels::Stream& stream) {
  auto comm = world();
  const int rank = comm->rank();
  std::vector<kernels::Buffer<float>> values;
  std::vector<ParameterSpec> specs;
  for (std::size_t i = 0; i < std::size(kNumels); ++i) {
    std::vector<float> init(kNumels[i]);
    for (std::size_t j = 0; j < init.size(); ++j) init[j] = std::sin(0.001f * float(j + 7 * i));
    values.emplace_back(init.size(), stream);
    kernels::copy_bytes(values.back().data(), init.data(), init.size() * sizeof(float), stream);
    specs.push_back({"p" + std::to_string(i), values.back().data(), init.size(), kRows[i]});
  }
  stream.synchronize();
  DistributedOptimizerOptions options = settings(s);
  options.stream = stream;
  DistributedOptimizer opt(comm, std::make_unique<StreamSgd>(stream), specs, options);
  TrainingRun run;
  for (int step = 0; step < kSteps; ++step) {
    // Backward, last parameter first, each gradient ready as soon as it is written.
    std::mt19937 rng(static_cast<unsigned>(100 * step + rank));
    std::normal_distribution<float> noise(0.0f, 1.0f);
    for (std::size_t i = std::size(kNumels); i-- > 0;) {
      std::vector<float> g(kNumels[i]);
      for (float& x : g) x = noise(rng) * opt.loss_scale();
      kernels::copy_bytes(opt.gradient(i), g.data(), g.size() * sizeof(float), stream);
      stream.synchronize();
      opt.gradient_ready(i);
    }
    opt.step();
    std::vector<float> flat;
    for (std::size_t i = 0; i < values.size(); ++i) {
      std::vector<float> host(kNumels[i]);
      kernels::copy_bytes(host.data(), values[i].data(), host.size() * sizeof(float), stream);
      stream.synchronize();
      flat.insert(flat.end(), host.begin(), host.end());
    }
    run.params.push_back(std::move(flat));
  }
  std::ostringstream state;
  opt.save_state(state);
  run.state.push_back(state.str());
  return run;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class DeviceStep : public ::testing::TestWithParam<Settings> {
 protected:
  void SetUp() override {
    if (!kernels::cuda_device_available()) {
      GTEST_SKIP() << "no CUDA device: the device-resident step is built but cannot run here";
    }
  }
};

TEST_P(DeviceStep, EqualsTheHostRunBitForBit) {
  const TrainingRun host = train(GetParam(), kernels::Stream::host());
  const TrainingRun device = train(GetParam(), kernels::Stream::cuda());
  ASSERT_EQ(host.params.size(), device.params.size());
  for (std::size_t step = 0; step < host.params.size(); ++step) {
    EXPECT_TRUE(same_bits(host.params[step], device.params[step])) << "after step " << step;
  }
  // The residuals, DGC's momentum and accumulator, the loss scale, the anchor: all equal, so the
  // sparse strategies selected the same indices at every step.
  EXPECT_EQ(host.state, device.state);
}

const Settings kSparse = {{kDgcSparsity, "0.99"}, {kDgcMinNumel, "1000"}};

INSTANTIATE_TEST_SUITE_P(
    Strategies, DeviceStep,
    ::testing::Values(Settings{}, Settings{{kCompressor, "fp16"}},
                      with(kSparse, {{kCompressor, "topk"}}), with(kSparse, {{kCompressor, "dgc"}}),
                      Settings{{kSync, "local_sgd"}, {kLocalSgdK, "2"}},
                      Settings{{kSync, "local_sgd"}, {kLocalSgdK, "2"}, {kCompressor, "fp16"}},
                      // DiLoCo's outer step and momentum on the device, topk pseudo-gradients.
                      with(kSparse, {{kSync, "diloco"}, {kLocalSgdK, "2"}, {kCompressor, "topk"}}),
                      Settings{{kAmp, "1"}}, with(kSparse, {{kCompressor, "dgc"}, {kAmp, "1"}}),
                      // The split on the device at every world size the test runs at.
                      with(kSparse, {{kCompressor, "dgc"}, {config::keys::kSparseAlgo, "split"}}),
                      with(kSparse, {{kCompressor, "topk"},
                                     {config::keys::kSparseAlgo, "split"},
                                     {config::keys::kSparseWire, "pairs"}}),
                      // Two whole steps, then factors: the same P, Q and residuals on both.
                      Settings{{kCompressor, "powersgd"},
                               {config::keys::kPowerSgdRank, "2"},
                               {config::keys::kPowerSgdStartStep, "2"}}));

// Note [Device phases on the host clock]: the timeline's bucket phases are the device's times. A
// bucket released behind a long queue of kernels on the program's stream waits for its gradients,
// on the timeline, as long as the device took to run that queue; host clock readings around
// gradient_ready would show only the microseconds it took to enqueue it.
TEST(DeviceTimeline, BucketPhasesAreTheDevicesTimes) {
  if (!kernels::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  const kernels::Stream stream = kernels::Stream::cuda();
  auto comm = world();
  std::vector<kernels::Buffer<float>> values;
  std::vector<ParameterSpec> specs;
  for (std::size_t i = 0; i < std::size(kNumels); ++i) {
    values.emplace_back(kNumels[i], stream);
    kernels::fill_zero(values.back().data(), kNumels[i] * sizeof(float), stream);
    specs.push_back({"p" + std::to_string(i), values.back().data(), kNumels[i]});
  }
  const std::string base = "/tmp/gw-device-timeline-" + std::to_string(::getpid()) + ".json";
  DistributedOptimizerOptions options = settings(
      {{config::keys::kFusionThresholdMb, "0.01"}, {config::keys::kTimeline, base.c_str()}});
  options.stream = stream;
  std::string path;
  const std::size_t busy_numel = std::size_t{64} << 20;  // 256 MB, re-scaled 40 times
  kernels::Buffer<float> busy(busy_numel, stream);
  kernels::fill_zero(busy.data(), busy_numel * sizeof(float), stream);
  std::vector<double> busy_ms;
  std::size_t buckets = 0;
  {
    DistributedOptimizer opt(comm, std::make_unique<StreamSgd>(stream), specs, options);
    path = opt.timeline_path();
    buckets = opt.bucket_plan().size();
    ASSERT_GE(buckets, 2u);
    for (int step = 0; step < 3; ++step) {
      for (std::size_t i = 0; i < std::size(kNumels); ++i) {
        kernels::fill_zero(opt.gradient(i), kNumels[i] * sizeof(float), stream);
      }
      stream.synchronize();
      // The first gradient is ready; the rest come after the queue, as from a long backward.
      const std::size_t last = std::size(kNumels) - 1;
      opt.gradient_ready(last);
      kernels::Event busy_begin, busy_end;
      busy_begin.record(stream);
      for (int r = 0; r < 40; ++r) kernels::scale(busy.data(), 1.0f, busy_numel, stream);
      busy_end.record(stream);
      for (std::size_t i = last; i-- > 0;) opt.gradient_ready(i);
      opt.step();
      busy_ms.push_back(busy_end.elapsed_ms_since(busy_begin));
    }
  }
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path;
  const nlohmann::json events = nlohmann::json::parse(in);
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    ASSERT_GT(busy_ms[step], 1.0);
    // The bucket of parameter 0 is released last: the last track.
    double waited_us = -1.0;
    int encodes = 0;
    for (const auto& e : events) {
      if (e.at("ph") != "X" || e.at("args").at("step").get<int>() != step) continue;
      EXPECT_GE(e.at("dur").get<double>(), 0.0) << e.dump();
      if (e.at("name") == "encode") ++encodes;
      if (e.at("name") == "wait for gradients" && e.at("tid").get<std::size_t>() == buckets) {
        waited_us = e.at("dur").get<double>();
      }
    }
    EXPECT_EQ(encodes, static_cast<int>(buckets));
    EXPECT_GE(waited_us, 0.9 * 1000.0 * busy_ms[step]);
  }
  std::remove(path.c_str());
}

// A malformed sparse message found on the device: a repeated index and one out of range are
// refused with the pair named, before anything is added.
TEST(DeviceSparseMessage, RepeatsAndOutOfRangeIndicesAreRefusedOnTheDevice) {
  if (!kernels::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  const kernels::Stream stream = kernels::Stream::cuda();
  kernels::Buffer<float> storage(16, stream);
  kernels::fill_zero(storage.data(), 16 * sizeof(float), stream);
  compressors::BucketView bucket;
  bucket.data = storage.data();
  bucket.numel = 16;
  bucket.tensors = {{0, 0, 16}};
  compressors::ExchangePlan plan;
  plan.sparse = {0};
  plan.k = {3};
  const auto check = [&](std::vector<std::uint32_t> words, const std::string& fragment) {
    kernels::Buffer<std::uint32_t> on_device(words.size(), stream);
    kernels::copy_bytes(on_device.data(), words.data(), words.size() * 4, stream);
    compressors::SparseSegments segments;
    try {
      compressors::validate_sparse_messages(bucket, plan, on_device.data(), {words.size()},
                                            segments, stream);
      ADD_FAILURE() << "accepted " << fragment;
    } catch (const compressors::PayloadError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  const std::uint32_t one = 0x3f800000u;
  check({2, 4, one, 4, one}, "pair 1 has index 4, not above pair 0's index 4");
  check({2, 4, one, 16, one}, "pair 1 has index 16, outside [0, 16)");
}

}  // namespace
}  // namespace gw
