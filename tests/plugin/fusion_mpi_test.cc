// Tensor fusion and the engine under a real mpirun: fused and per-tensor buckets train to the same
// parameters under every strategy, buckets run in plan order on every rank whatever order and
// speed backward has, the timeline's events, and an engine failure reaching step().
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "plugin_test_util.h"
#include "reference_trainer/nn/make_model.h"
#include "reference_trainer/optim/sgd.h"

namespace gw {
namespace {

namespace keys = config::keys;
using testing::settings;
using testing::world;

using testing::momentum_sgd;

// Trains the reference MLP (6 tensors) for `steps` steps on rank-specific random data, reporting
// each layer's gradients as backward produces them, and returns the final parameters.
std::vector<float> train_mlp(const testing::Settings& values, int steps) {
  const auto comm = world();
  auto model = trainer::make_model("mlp", 42);
  std::vector<ParameterSpec> specs;
  for (const auto& p : model->parameters()) specs.push_back({p.name, p.value, p.numel});
  DistributedOptimizer opt(comm, momentum_sgd(), specs, settings(values));
  model->bind_gradients(opt.gradient_views());
  if (opt.amp_settings().enabled) model->set_op_policy(&opt.amp_settings().ops);
  constexpr std::size_t kBatch = 16, kFeatures = 784;
  std::vector<float> images(kBatch * kFeatures);
  std::vector<std::uint8_t> labels(kBatch);
  const auto on_ready = [&opt](std::size_t i) { opt.gradient_ready(i); };
  for (int step = 0; step < steps; ++step) {
    std::mt19937 rng(static_cast<unsigned>(1000 * step + comm->rank()));
    std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
    for (auto& x : images) x = pixel(rng);
    for (auto& y : labels) y = static_cast<std::uint8_t>(rng() % 10);
    const float loss =
        model->forward_backward(images.data(), labels.data(), kBatch, on_ready, opt.loss_scale());
    opt.report_loss(loss);
    opt.step();
  }
  opt.synchronize_parameters();
  return std::vector<float>(model->parameter_buffer(),
                            model->parameter_buffer() + model->num_parameters());
}

double max_abs_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::fabs(a[i] - b[i])));
  }
  return worst;
}

struct Strategy {
  const char* name;
  testing::Settings values;
  int steps = 30;
};

class FusionEquivalence : public ::testing::TestWithParam<Strategy> {};

// Note [Fusion does not change the result]
// A bucket's exchange is per tensor in everything but the collective's length: compressors keep
// state and select per parameter, AMP's unscale is one factor for all, local SGD averages per
// element. So one bucket per tensor (threshold 0), a middle cut and one bucket for everything
// must give the same parameters, up to the summation order MPI picks for a message of a given
// length, which the tolerance covers.
TEST_P(FusionEquivalence, OneBucketPerTensorAndFusedBucketsTrainTheSameParameters) {
  std::vector<std::vector<float>> results;
  std::vector<std::size_t> bucket_counts;
  for (const char* threshold : {"0", "2", "64"}) {
    testing::Settings values = GetParam().values;
    values.push_back({keys::kFusionThresholdMb, threshold});
    results.push_back(train_mlp(values, GetParam().steps));
  }
  const double per_tensor_vs_fused = max_abs_difference(results[0], results[2]);
  const double middle_vs_fused = max_abs_difference(results[1], results[2]);
  if (world()->rank() == 0) {
    std::printf("%s: max |difference| per-tensor vs fused %.3g, 2 MiB buckets vs fused %.3g\n",
                GetParam().name, per_tensor_vs_fused, middle_vs_fused);
  }
  EXPECT_LE(per_tensor_vs_fused, 1e-6) << GetParam().name;
  EXPECT_LE(middle_vs_fused, 1e-6) << GetParam().name;
  // The runs did train: the parameters moved away from the initial ones.
  auto initial = trainer::make_model("mlp", 42);
  const std::vector<float> start(initial->parameter_buffer(),
                                 initial->parameter_buffer() + initial->num_parameters());
  EXPECT_GT(max_abs_difference(results[2], start), 1e-3);
}

// Note [Short twins for the sanitizer trees]
// Each strategy trains 30 steps: dgc's warm-up (sparsity 0.75, 0.99 from step 10, over at 20)
// and 10 steps after it; local SGD averaging every 4 steps. dgc_short and local_sgd_fp16_short
// run the same code in fewer steps (dgc's warm-up of 4 steps, 0.99 from step 2, then 4 steps
// after it; two averaging periods), and fp16_short, amp_short and amp_topk_short the first 8 of
// their twins' steps (their paths do not change after the first step); they stand in for their
// long twins in the sanitizer trees (tests/plugin/CMakeLists.txt,
// tests/sanitizers/CMakeLists.txt), which look for races and memory errors on the paths a run
// takes, not for how far it trains; ./build runs both, and none trains its 30 steps everywhere.
INSTANTIATE_TEST_SUITE_P(
    Strategies, FusionEquivalence,
    ::testing::Values(
        Strategy{"none", {}}, Strategy{"fp16", {{keys::kCompressor, "fp16"}}},
        Strategy{"dgc",
                 {{keys::kCompressor, "dgc"},
                  {keys::kDgcRampupSteps, "20"},
                  {keys::kDgcSparsity, "0.75,0.99"}}},
        Strategy{"dgc_short",
                 {{keys::kCompressor, "dgc"},
                  {keys::kDgcRampupSteps, "4"},
                  {keys::kDgcSparsity, "0.75,0.99"}},
                 8},
        Strategy{"fp16_short", {{keys::kCompressor, "fp16"}}, 8},
        Strategy{"amp", {{keys::kAmp, "1"}, {keys::kAmpInitScale, "1024"}}},
        Strategy{"amp_short", {{keys::kAmp, "1"}, {keys::kAmpInitScale, "1024"}}, 8},
        Strategy{"amp_topk", {{keys::kAmp, "1"}, {keys::kCompressor, "topk"}}},
        Strategy{"amp_topk_short", {{keys::kAmp, "1"}, {keys::kCompressor, "topk"}}, 8},
        Strategy{
            "local_sgd_fp16",
            {{keys::kSync, "local_sgd"}, {keys::kLocalSgdK, "4"}, {keys::kCompressor, "fp16"}}},
        Strategy{"local_sgd_fp16_short",
                 {{keys::kSync, "local_sgd"}, {keys::kLocalSgdK, "4"}, {keys::kCompressor, "fp16"}},
                 8}),
    [](const ::testing::TestParamInfo<Strategy>& info) { return std::string(info.param.name); });

TEST(Fusion, TheMlpIsCutAsPlanned) {
  const auto comm = world();
  auto model = trainer::make_model("mlp", 1);
  std::vector<ParameterSpec> specs;
  for (const auto& p : model->parameters()) specs.push_back({p.name, p.value, p.numel});
  // 2 MiB is 524,288 floats: fc3 and fc2.bias fill bucket 0 (5,642 floats); fc2.weight, exactly
  // 524,288, cannot join them but fills bucket 1 alone; fc1.bias cannot join it; fc1.weight
  // (802,816) is larger than the threshold and has a bucket of its own.
  DistributedOptimizer opt(comm, momentum_sgd(), specs,
                           settings({{keys::kFusionThresholdMb, "2"}}));
  const fusion::BucketPlan& plan = opt.bucket_plan();
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_EQ(plan.buckets[0].begin, 3u);  // fc2.bias .. fc3.bias
  EXPECT_EQ(plan.buckets[1].begin, 2u);  // fc2.weight
  EXPECT_EQ(plan.buckets[2].begin, 1u);  // fc1.bias
  EXPECT_EQ(plan.buckets[3].begin, 0u);  // fc1.weight
  EXPECT_EQ(plan.buckets[0].numel, 5642u);
}

// Tensors of assorted sizes: 6 buckets at a 3000-byte threshold (kSmallThreshold MiB): t10..t11,
// t7..t9, t5..t6, t4, t1..t3, t0.
constexpr const char* kSmallThreshold = "0.00286102294921875";
struct ManyTensors {
  std::vector<std::vector<float>> values;
  ManyTensors() {
    for (std::size_t n : {300, 10, 500, 120, 700, 5, 60, 400, 90, 250, 30, 600}) {
      values.emplace_back(n, 0.0f);
    }
  }
  std::vector<ParameterSpec> specs() {
    std::vector<ParameterSpec> s;
    for (std::size_t i = 0; i < values.size(); ++i) {
      s.push_back({"t" + std::to_string(i), values[i].data(), values[i].size()});
    }
    return s;
  }
};

using testing::NoUpdate;

TEST(Fusion, BucketsRunInPlanOrderOnEveryRankWhateverTheOrderAndSpeedOfBackward) {
  const auto comm = world();
  const int rank = comm->rank(), n = comm->size();
  ManyTensors model;
  DistributedOptimizer opt(comm, std::make_unique<NoUpdate>(), model.specs(),
                           settings({{keys::kFusionThresholdMb, kSmallThreshold}}));
  const std::size_t buckets = opt.bucket_plan().size();
  ASSERT_EQ(buckets, 6u);
  const std::size_t tensors = model.values.size();
  std::vector<std::size_t> expected(buckets);
  std::iota(expected.begin(), expected.end(), 0);
  for (int step = 0; step < 6; ++step) {
    // Rank-dependent marking orders: backward's, forward (the reverse), random; and speeds: a
    // pause after every mark on some ranks, at some steps.
    std::vector<std::size_t> order(tensors);
    std::iota(order.begin(), order.end(), 0);
    const int kind = (rank + step) % 3;
    if (kind == 0) std::reverse(order.begin(), order.end());
    if (kind == 2) std::shuffle(order.begin(), order.end(), std::mt19937(rank * 31 + step));
    const auto pause = std::chrono::microseconds((rank + step) % 2 == 0 ? 2000 : 0);
    for (std::size_t i = 0; i < tensors; ++i) {
      float* g = opt.gradient(i);
      for (std::size_t j = 0; j < model.values[i].size(); ++j) {
        g[j] = static_cast<float>(rank + 1 + step + i + j % 3);
      }
    }
    for (std::size_t i : order) {
      opt.gradient_ready(i);
      if (pause.count() > 0) std::this_thread::sleep_for(pause);
    }
    opt.step();
    EXPECT_EQ(opt.last_run_order(), expected) << "rank " << rank << " step " << step;
    // And the sums are right, which they would not be if ranks had paired different buckets.
    for (std::size_t i = 0; i < tensors; ++i) {
      const float* g = opt.gradient(i);
      for (std::size_t j = 0; j < model.values[i].size(); ++j) {
        const float want = static_cast<float>(n * (n + 1) / 2 + n * (step + i + j % 3));
        ASSERT_EQ(g[j], want) << "tensor " << i << " element " << j << " step " << step;
      }
    }
  }
}

// Reads rank r's timeline file and parses it (it must be complete JSON after every step).
nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return nlohmann::json::parse(in);  // throws on malformed JSON, failing the test
}

std::string timeline_base() {
  // One directory for all ranks: rank 0 creates it and broadcasts the name.
  char dir[64] = "/tmp/gw-timeline-XXXXXX";
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0 && mkdtemp(dir) == nullptr) dir[0] = '\0';
  MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
  EXPECT_NE(dir[0], '\0');
  return std::string(dir) + "/trace.json";
}

TEST(Timeline, AThreeStepRunWritesEveryBucketsPhasesAndEveryStep) {
  const auto comm = world();
  const int rank = comm->rank();
  ManyTensors model;
  const std::string base = timeline_base();
  std::string path;
  {
    DistributedOptimizer opt(
        comm, std::make_unique<NoUpdate>(), model.specs(),
        settings({{keys::kFusionThresholdMb, kSmallThreshold}, {keys::kTimeline, base.c_str()}}));
    path = opt.timeline_path();
    EXPECT_EQ(path, base.substr(0, base.size() - 5) + ".rank" + std::to_string(rank) + ".json");
    const std::size_t tensors = model.values.size();
    for (int step = 0; step < 3; ++step) {
      // Backward's order with a pause per tensor, so buckets 0.. usually go out while later ones
      // wait; nothing below depends on it (how much overlaps is gradwire_bench_overlap's verdict).
      for (std::size_t i = tensors; i-- > 0;) {
        std::fill(opt.gradient(i), opt.gradient(i) + model.values[i].size(), 1.0f);
        opt.gradient_ready(i);
        std::this_thread::sleep_for(std::chrono::milliseconds(3));
      }
      opt.step();
      // Complete JSON after every step, while the run goes on.
      const nlohmann::json events = read_json(path);
      ASSERT_TRUE(events.is_array());
    }
  }
  const nlohmann::json events = read_json(path);
  const std::int64_t buckets = 6;
  std::map<std::pair<std::string, std::int64_t>, std::vector<nlohmann::json>> by_name_step;
  const auto count = [&](const std::string& name, std::int64_t step) {
    return by_name_step[std::make_pair(name, step)].size();
  };
  std::set<std::int64_t> named_tracks;
  for (const auto& e : events) {
    ASSERT_EQ(e.at("pid").get<int>(), rank);
    if (e.at("ph") == "M") {
      if (e.at("name") == "thread_name") named_tracks.insert(e.at("tid").get<std::int64_t>());
      continue;
    }
    ASSERT_TRUE(e.at("ph") == "X" || e.at("ph") == "i") << e.dump();
    by_name_step[{e.at("name").get<std::string>(), e.at("args").at("step").get<std::int64_t>()}]
        .push_back(e);
  }
  EXPECT_EQ(named_tracks.size(), static_cast<std::size_t>(buckets + 1));
  for (std::int64_t step = 0; step < 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const std::string step_name = "step " + std::to_string(step);
    ASSERT_EQ(count(step_name, step), 2u);  // the span and the marker
    ASSERT_EQ(count("step() waits for buckets", step), 1u);
    ASSERT_EQ(count("inner optimizer", step), 1u);
    for (const char* phase : {"wait for gradients", "queued", "encode", "exchange", "decode"}) {
      const auto& spans = by_name_step[std::make_pair(std::string(phase), step)];
      ASSERT_EQ(spans.size(), static_cast<std::size_t>(buckets)) << phase;
      std::set<std::int64_t> tracks;
      for (const auto& s : spans) {
        tracks.insert(s.at("tid").get<std::int64_t>());
        EXPECT_GE(s.at("dur").get<double>(), 0.0) << s.dump();
      }
      EXPECT_EQ(tracks, (std::set<std::int64_t>{1, 2, 3, 4, 5, 6})) << phase;
    }
    // What the code guarantees, whatever the scheduling (no assertion needs a thread or a rank
    // to run within some time). Times are microseconds with 3 decimals in the file, so a value
    // and a sum of two values read back differ by rounding only: kSlack.
    constexpr double kSlack = 0.002;
    const auto span_of = [&](const char* phase, std::int64_t track) {
      for (const auto& s : by_name_step[std::make_pair(std::string(phase), step)]) {
        if (s.at("tid").get<std::int64_t>() == track) return s;
      }
      ADD_FAILURE() << "no " << phase << " span on track " << track;
      return nlohmann::json{{"ts", 0.0}, {"dur", 0.0}};
    };
    const auto begin = [](const nlohmann::json& s) { return s.at("ts").get<double>(); };
    const auto end = [](const nlohmann::json& s) {
      return s.at("ts").get<double>() + s.at("dur").get<double>();
    };
    const double first_ready = begin(span_of("wait for gradients", 1));
    for (std::int64_t track = 1; track <= buckets; ++track) {
      // Every bucket waits from the step's first gradient_ready.
      EXPECT_EQ(begin(span_of("wait for gradients", track)), first_ready) << "track " << track;
      // A bucket's phases are contiguous: one clock reading ends a phase and starts the next.
      double t = first_ready;
      for (const char* phase : {"wait for gradients", "queued", "encode", "exchange", "decode"}) {
        const nlohmann::json s = span_of(phase, track);
        EXPECT_NEAR(begin(s), t, kSlack) << phase << " on track " << track;
        t = end(s);
      }
      if (track == 1) continue;
      // Buckets are released in plan order, and the engine runs one at a time in that order.
      EXPECT_LE(begin(span_of("queued", track - 1)), begin(span_of("queued", track)))
          << "track " << track;
      EXPECT_LE(end(span_of("decode", track - 1)), begin(span_of("encode", track)) + kSlack)
          << "track " << track;
    }
    // step() comes after the last gradient_ready and returns after the last bucket's decode; the
    // inner optimizer starts where the wait ends; the step's span holds all of it.
    const nlohmann::json waits = span_of("step() waits for buckets", 0);
    const nlohmann::json inner = span_of("inner optimizer", 0);
    EXPECT_LE(begin(span_of("queued", buckets)), begin(waits) + kSlack);
    EXPECT_LE(end(span_of("decode", buckets)), end(waits) + kSlack);
    EXPECT_NEAR(begin(inner), end(waits), kSlack);
    for (const auto& marker : by_name_step[std::make_pair(step_name, step)]) {
      if (marker.at("ph") != "X") continue;
      EXPECT_LE(begin(marker), first_ready + kSlack);
      EXPECT_GE(end(marker) + kSlack, end(inner));
    }
  }
}

TEST(Timeline, ChecksAndAveragingsUnderAmpAndLocalSgdHaveTheirOwnSpans) {
  // Local steps under AMP: every bucket's job is the check, and every second step ends with an
  // averaging through the same buckets; neither may borrow the other's times. Rank 0's inf at
  // step 2 skips that step on every rank, and the program's track says so.
  const auto comm = world();
  ManyTensors model;
  const std::string base = timeline_base();
  std::string path;
  {
    DistributedOptimizer opt(comm, momentum_sgd(), model.specs(),
                             settings({{keys::kFusionThresholdMb, kSmallThreshold},
                                       {keys::kAmp, "1"},
                                       {keys::kSync, "local_sgd"},
                                       {keys::kLocalSgdK, "2"},
                                       {keys::kTimeline, base.c_str()}}));
    path = opt.timeline_path();
    for (int step = 0; step < 4; ++step) {
      for (std::size_t i = model.values.size(); i-- > 0;) {
        std::fill(opt.gradient(i), opt.gradient(i) + model.values[i].size(), 1.0f);
        if (step == 2 && i == 0 && comm->rank() == 0) {
          opt.gradient(0)[0] = std::numeric_limits<float>::infinity();
        }
        opt.gradient_ready(i);
      }
      opt.step();
    }
  }
  std::map<std::pair<std::string, std::int64_t>, int> count;
  for (const auto& e : read_json(path)) {
    if (e.at("ph") != "X") continue;
    EXPECT_GE(e.at("dur").get<double>(), 0.0) << e.dump();
    ++count[{e.at("name").get<std::string>(), e.at("args").at("step").get<std::int64_t>()}];
  }
  for (std::int64_t step = 0; step < 4; ++step) {
    EXPECT_EQ((count[{"amp check", step}]), 6) << "step " << step;
    EXPECT_EQ((count[{"queued", step}]), 6) << "step " << step;
    EXPECT_EQ((count[{"encode", step}]), 0) << "step " << step;
    EXPECT_EQ((count[{"average parameters", step}]), step % 2 == 1 ? 6 : 0) << "step " << step;
    EXPECT_EQ((count[{"inner optimizer", step}]), step == 2 ? 0 : 1) << "step " << step;
    EXPECT_EQ((count[{"step skipped (overflow)", step}]), step == 2 ? 1 : 0) << "step " << step;
  }
}

TEST(Engine, AFailureInABucketReachesStepOnEveryRankAndTheOptimizerStaysFailed) {
  const auto comm = world();
  ManyTensors model;
  DistributedOptimizerOptions options = settings({{keys::kFusionThresholdMb, kSmallThreshold}});
  options.inject_engine_failure.step = 2;
  options.inject_engine_failure.bucket = 1;
  DistributedOptimizer opt(comm, std::make_unique<NoUpdate>(), model.specs(), options);
  for (int step = 0; step < 2; ++step) {
    for (std::size_t i = model.values.size(); i-- > 0;) opt.gradient_ready(i);
    opt.step();
  }
  // Bucket 1 fails on the engine thread, which may get there before this thread has marked the
  // rest of the tensors (when this one is kept off a core that long): the failure then reaches
  // the next gradient_ready, else step(). Either way, with the same words.
  std::string what;
  try {
    for (std::size_t i = model.values.size(); i-- > 0;) opt.gradient_ready(i);
    opt.step();
    ADD_FAILURE() << "the engine's failure reached neither gradient_ready() nor step()";
  } catch (const std::runtime_error& e) {
    what = e.what();
  }
  EXPECT_NE(
      what.find("rank " + std::to_string(comm->rank()) + ", step 2, bucket 1 of 6 (t9 .. t7)"),
      std::string::npos)
      << what;
  EXPECT_NE(what.find("injected failure"), std::string::npos) << what;
  try {
    opt.step();
    ADD_FAILURE() << "a failed optimizer stepped";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("unusable after an engine failure"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(opt.gradient_ready(0), std::runtime_error);
}

}  // namespace
}  // namespace gw
