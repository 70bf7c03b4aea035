// GRADWIRE_SYNC through DistributedOptimizer under a real mpirun: local SGD with k = 1 against
// synchronous SGD, identical parameters after every averaging point, traffic from the counters,
// the adaptive period on the ranks' mean loss, optimizer-state averaging, checkpoint and resume,
// and the configuration errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <sstream>

#include "plugin_test_util.h"
#include "reference_trainer/optim/adam.h"
#include "reference_trainer/optim/sgd.h"

namespace gw {
namespace {

namespace keys = config::keys;
using testing::identical_on_all_ranks;
using testing::Settings;
using testing::settings;
using testing::world;

using testing::sgd;

constexpr std::size_t kBig = testing::TwoTensorModel::kBig;
constexpr std::size_t kTotal = testing::TwoTensorModel::kTotal;

// The two-tensor model with a nonlinear pull towards zero, so ranks drift apart between
// averaging points and errors would compound. (With a gradient linear in w, averaging would
// commute with plain SGD's steps and local SGD would equal synchronous SGD for any k.)
struct Model : testing::TwoTensorModel {
  Model() {
    pull = [](float w) { return 0.3f * w + 0.5f * w * w * w; };
  }
};

// A loss that falls with the step and differs by rank, so the mean over ranks matters.
double scripted_loss(std::int64_t step, int rank) {
  return 2.0 / (1.0 + 0.05 * static_cast<double>(step)) * (1.0 + 0.1 * rank);
}

void train(Model& model, DistributedOptimizer& opt, int rank, std::int64_t from, std::int64_t to) {
  for (std::int64_t step = from; step < to; ++step) {
    model.gradients(opt, rank, step);
    opt.report_loss(scripted_loss(step, rank));
    opt.step();
  }
}

double max_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::fabs(a[i] - b[i])));
  }
  return worst;
}

TEST(LocalSgd, WithKOneAndPlainSgdEqualsSynchronousSgd) {
  const auto comm = world();
  const int rank = comm->rank();
  // Plain SGD as the issue states it, then momentum and weight decay: SGD is linear in its
  // gradients and state, so averaging after every step is synchronous SGD for those too.
  for (double momentum : {0.0, 0.9}) {
    Model sync_model, local_model;
    DistributedOptimizer sync(comm, sgd(momentum, 1e-3), sync_model.specs(), settings({}));
    DistributedOptimizer local(comm, sgd(momentum, 1e-3), local_model.specs(),
                               settings({{keys::kSync, "local_sgd"}, {keys::kLocalSgdK, "1"}}));
    train(sync_model, sync, rank, 0, 50);
    train(local_model, local, rank, 0, 50);
    EXPECT_LE(max_difference(local_model.flat(), sync_model.flat()), 1e-5)
        << "momentum " << momentum;
    EXPECT_EQ(local.sync_stats().parameter_exchanges, 50);
    EXPECT_EQ(local.sync_stats().gradient_exchanges, 0);
    EXPECT_EQ(sync.sync_stats().gradient_exchanges, 50);
  }
  // The comparison can fail: with k = 2 the ranks drift apart between averagings.
  if (comm->size() > 1) {
    Model sync_model, local_model;
    DistributedOptimizer sync(comm, sgd(), sync_model.specs(), settings({}));
    DistributedOptimizer local(comm, sgd(), local_model.specs(),
                               settings({{keys::kSync, "local_sgd"}, {keys::kLocalSgdK, "2"}}));
    train(sync_model, sync, rank, 0, 50);
    train(local_model, local, rank, 0, 50);
    EXPECT_GT(max_difference(local_model.flat(), sync_model.flat()), 1e-4);
  }
}

TEST(LocalSgd, AllRanksHoldIdenticalParametersAfterEveryAveragingPoint) {
  const auto comm = world();
  const std::vector<Settings> configs = {
      {{keys::kSync, "local_sgd"}, {keys::kLocalSgdK, "3"}},
      {{keys::kSync, "local_sgd"}, {keys::kLocalSgdK, "3"}, {keys::kCompressor, "fp16"}},
      {{keys::kSync, "post_local_sgd"}, {keys::kLocalSgdBeginStep, "4"}, {keys::kLocalSgdK, "3"}},
      {{keys::kSync, "adaptive_local_sgd"},
       {keys::kAdaptiveInitK, "3"},
       {keys::kAdaptiveMaxK, "5"},
       {keys::kCompressor, "fp16"}},
  };
  for (std::size_t c = 0; c < configs.size(); ++c) {
    Model model;
    DistributedOptimizer opt(comm, sgd(0.9), model.specs(), settings(configs[c]));
    int points = 0, diverged = 0;
    for (std::int64_t step = 0; step < 30; ++step) {
      const std::int64_t before = opt.sync_stats().parameter_exchanges;
      train(model, opt, comm->rank(), step, step + 1);
      const bool averaged = opt.sync_stats().parameter_exchanges > before;
      const bool same = identical_on_all_ranks(*comm, model.flat());
      if (averaged) {
        ++points;
        EXPECT_TRUE(same) << "config " << c << ", averaging after step " << step;
      } else if (!opt.sync_policy().exchanges_gradients(step)) {
        diverged += same ? 0 : 1;
      } else {
        EXPECT_TRUE(same) << "config " << c << ", synchronous step " << step;
      }
    }
    EXPECT_GE(points, 6) << "config " << c;
    // Between points the ranks do differ, so the check above is not vacuous.
    if (comm->size() > 1) EXPECT_GT(diverged, 0) << "config " << c;
  }
}

TEST(LocalSgd, TrafficIsAveragingPointsTimesParameterBytes) {
  const auto comm = world();
  const int rank = comm->rank(), n = comm->size();
  const auto fp32_point = CountingCommunicator::allreduce_bytes(kTotal, 4, rank, n);
  const auto fp16_point = CountingCommunicator::allreduce_bytes(kTotal, 2, rank, n);
  struct Case {
    Settings settings;
    std::int64_t gradient_exchanges, points;
    std::uint64_t point_bytes;
  };
  const std::vector<Case> cases = {
      {{{keys::kSync, "local_sgd"}, {keys::kLocalSgdK, "4"}}, 0, 5, fp32_point},
      {{{keys::kSync, "local_sgd"}, {keys::kLocalSgdK, "4"}, {keys::kCompressor, "fp16"}},
       0,
       5,
       fp16_point},
      // Synchronous steps 0..5, then points after steps 9, 13, 17.
      {{{keys::kSync, "post_local_sgd"}, {keys::kLocalSgdBeginStep, "6"}, {keys::kLocalSgdK, "4"}},
       6,
       3,
       fp32_point},
      // Momentum averaged too: one more fp32 array as large as the parameters per point.
      {{{keys::kSync, "local_sgd"}, {keys::kLocalSgdK, "4"}, {keys::kLocalSgdAverageState, "1"}},
       0,
       5,
       2 * fp32_point},
  };
  for (std::size_t c = 0; c < cases.size(); ++c) {
    Model model;
    DistributedOptimizer opt(comm, sgd(0.9), model.specs(), settings(cases[c].settings));
    const TrafficCounters before = comm->counters();  // after the initial broadcast
    train(model, opt, rank, 0, 20);
    const TrafficCounters after = comm->counters();
    const SyncStats& s = opt.sync_stats();
    EXPECT_EQ(s.gradient_exchanges, cases[c].gradient_exchanges) << "case " << c;
    EXPECT_EQ(s.parameter_exchanges, cases[c].points) << "case " << c;
    EXPECT_EQ(
        after[TrafficKind::kParameter].sent_bytes - before[TrafficKind::kParameter].sent_bytes,
        static_cast<std::uint64_t>(cases[c].points) * cases[c].point_bytes)
        << "case " << c;
    EXPECT_EQ(after[TrafficKind::kGradient].sent_bytes - before[TrafficKind::kGradient].sent_bytes,
              static_cast<std::uint64_t>(cases[c].gradient_exchanges) * fp32_point)
        << "case " << c;
  }
}

TEST(LocalSgd, SynchronizeParametersAveragesMidPeriodWithoutMovingTheSchedule) {
  const auto comm = world();
  Model model;
  DistributedOptimizer opt(comm, sgd(0.9), model.specs(),
                           settings({{keys::kSync, "local_sgd"}, {keys::kLocalSgdK, "4"}}));
  const auto parameter_bytes = [&] { return comm->counters()[TrafficKind::kParameter].sent_bytes; };
  const auto start = parameter_bytes();
  opt.synchronize_parameters();  // nothing ran locally yet
  EXPECT_EQ(parameter_bytes(), start);
  train(model, opt, comm->rank(), 0, 6);  // a point after step 3, then steps 4 and 5 locally
  opt.synchronize_parameters();
  EXPECT_TRUE(identical_on_all_ranks(*comm, model.flat()));
  const auto mid = parameter_bytes();
  opt.synchronize_parameters();  // again: already in step
  EXPECT_EQ(parameter_bytes(), mid);
  ASSERT_EQ(opt.sync_stats().points.size(), 2u);
  const AveragingPoint& requested = opt.sync_stats().points[1];
  EXPECT_TRUE(requested.requested);
  EXPECT_EQ(requested.step, 5);
  EXPECT_EQ(requested.local_steps, 2);
  EXPECT_EQ(opt.sync_policy().next_average_step(), 7);  // unchanged
  train(model, opt, comm->rank(), 6, 8);
  EXPECT_EQ(opt.sync_stats().points.back().step, 7);
  EXPECT_FALSE(opt.sync_stats().points.back().requested);

  Model dense_model;
  DistributedOptimizer dense(comm, sgd(0.9), dense_model.specs(), settings({}));
  train(dense_model, dense, comm->rank(), 0, 3);
  const auto dense_start = parameter_bytes();
  dense.synchronize_parameters();
  EXPECT_EQ(parameter_bytes(), dense_start);
  EXPECT_TRUE(dense.sync_stats().points.empty());
}

TEST(LocalSgd, SynchronizeGradientsOnALocalStepLeavesThisRanksGradient) {
  const auto comm = world();
  Model model, twin;
  const Settings local = {{keys::kSync, "local_sgd"}, {keys::kLocalSgdK, "4"}};
  DistributedOptimizer opt(comm, sgd(0.9), model.specs(), settings(local));
  DistributedOptimizer plain(comm, sgd(0.9), twin.specs(), settings(local));
  model.gradients(opt, comm->rank(), 0);
  twin.gradients(plain, comm->rank(), 0);
  const std::vector<float> mine(opt.gradient(0), opt.gradient(0) + kBig);
  const auto before = comm->counters()[TrafficKind::kGradient].sent_bytes;
  opt.synchronize_gradients();
  EXPECT_EQ(comm->counters()[TrafficKind::kGradient].sent_bytes, before);
  EXPECT_EQ(std::memcmp(opt.gradient(0), mine.data(), kBig * sizeof(float)), 0);
  // The step that follows uses it as step() alone would have.
  opt.step();
  plain.step();
  EXPECT_EQ(std::memcmp(model.big.data(), twin.big.data(), kBig * sizeof(float)), 0);
}

TEST(LocalSgd, AdaptivePeriodFollowsTheRanksMeanLoss) {
  const auto comm = world();
  const int n = comm->size();
  Model model;
  DistributedOptimizer opt(comm, sgd(0.9), model.specs(),
                           settings({{keys::kSync, "adaptive_local_sgd"},
                                     {keys::kAdaptiveInitK, "6"},
                                     {keys::kAdaptiveMaxK, "8"}}));
  train(model, opt, comm->rank(), 0, 60);
  const auto& points = opt.sync_stats().points;
  ASSERT_GE(points.size(), 5u);
  std::int64_t from = 0;
  double loss_0 = 0;
  std::int64_t k = 6;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const AveragingPoint& p = points[i];
    ASSERT_TRUE(p.has_loss);
    EXPECT_EQ(p.step, from + k - 1);
    EXPECT_EQ(p.k, k);
    // The mean over ranks and over the steps of the period.
    double sum = 0;
    for (std::int64_t s = from; s <= p.step; ++s) {
      for (int r = 0; r < n; ++r) sum += scripted_loss(s, r);
    }
    const double expected = sum / static_cast<double>(n * (p.step - from + 1));
    EXPECT_NEAR(p.loss, expected, 1e-12 * expected);
    if (i == 0) loss_0 = p.loss;
    k = sync_policies::adaptive_period(0.05, 0.05, loss_0, p.loss, 6, 8);
    EXPECT_EQ(p.next_k, k);
    from = p.step + 1;
  }
  // The scripted loss falls by more than half over 60 steps: the period shortened.
  EXPECT_LT(points.back().next_k, 6);
  EXPECT_GE(points.back().next_k, 1);

  // Without the loss the policy cannot choose: a clear error at step().
  Model other;
  DistributedOptimizer silent(comm, sgd(), other.specs(),
                              settings({{keys::kSync, "adaptive_local_sgd"}}));
  other.gradients(silent, comm->rank(), 0);
  try {
    silent.step();
    FAIL() << "no exception";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("call report_loss(loss) before step()"), std::string::npos)
        << e.what();
  }
  silent.report_loss(1.0);
  EXPECT_THROW(silent.report_loss(1.0), std::logic_error);
}

TEST(LocalSgd, AverageStateMakesTheMomentumIdenticalAcrossRanks) {
  const auto comm = world();
  if (comm->size() < 2) GTEST_SKIP() << "needs a peer";
  for (bool average_state : {false, true}) {
    Model model;
    DistributedOptimizer opt(comm, sgd(0.9), model.specs(),
                             settings({{keys::kSync, "local_sgd"},
                                       {keys::kLocalSgdK, "4"},
                                       {keys::kLocalSgdAverageState, average_state ? "1" : "0"}}));
    train(model, opt, comm->rank(), 0, 8);  // ends on an averaging point
    const auto buffers = *opt.inner().state_buffers();
    ASSERT_EQ(buffers.size(), 2u);
    std::vector<float> momentum(buffers[0].values, buffers[0].values + buffers[0].numel);
    EXPECT_EQ(identical_on_all_ranks(*comm, momentum), average_state);
    EXPECT_EQ(opt.sync_stats().state_exchanges, average_state ? 2 : 0);
  }
  // Adam's two moments per parameter are averaged the same way.
  trainer::Adam::Options a;
  a.lr = 1e-3;
  Model model;
  DistributedOptimizer adam(comm, std::make_unique<trainer::Adam>(a), model.specs(),
                            settings({{keys::kSync, "local_sgd"},
                                      {keys::kLocalSgdK, "2"},
                                      {keys::kLocalSgdAverageState, "1"}}));
  train(model, adam, comm->rank(), 0, 4);
  const auto moments = *adam.inner().state_buffers();
  ASSERT_EQ(moments.size(), 4u);
  std::vector<float> all;
  for (const auto& b : moments) all.insert(all.end(), b.values, b.values + b.numel);
  EXPECT_TRUE(identical_on_all_ranks(*comm, all));
}

struct Snapshot {
  std::vector<float> params;
  std::string state;
};

TEST(LocalSgd, SaveThenLoadContinuesBitIdentically) {
  const auto comm = world();
  const int rank = comm->rank();
  const std::vector<Settings> configs = {
      {{keys::kSync, "local_sgd"}, {keys::kLocalSgdK, "3"}},
      {{keys::kSync, "local_sgd"},
       {keys::kLocalSgdK, "3"},
       {keys::kCompressor, "fp16"},
       {keys::kLocalSgdAverageState, "1"}},
      {{keys::kSync, "post_local_sgd"},
       {keys::kLocalSgdBeginStep, "5"},
       {keys::kLocalSgdK, "4"},
       {keys::kCompressor, "fp16"}},
      {{keys::kSync, "adaptive_local_sgd"},
       {keys::kAdaptiveInitK, "3"},
       {keys::kAdaptiveMaxK, "6"}},
  };
  for (std::size_t c = 0; c < configs.size(); ++c) {
    // Straight through: 8 steps (mid-period for all), a checkpoint, 16 more.
    Model a;
    DistributedOptimizer first(comm, sgd(0.9), a.specs(), settings(configs[c]));
    train(a, first, rank, 0, 8);
    Snapshot saved{a.flat(), {}};
    std::ostringstream out;
    first.save_state(out);
    saved.state = out.str();
    train(a, first, rank, 8, 24);

    // Resumed: a fresh optimizer, this rank's parameters and state from the checkpoint.
    Model b;
    DistributedOptimizer second(comm, sgd(0.9), b.specs(), settings(configs[c]));
    b.set(saved.params);
    std::istringstream in(saved.state);
    second.load_state(in);
    EXPECT_EQ(second.steps(), 8);
    train(b, second, rank, 8, 24);
    EXPECT_EQ(std::memcmp(a.flat().data(), b.flat().data(), kTotal * sizeof(float)), 0)
        << "config " << c << ": resumed run differs";
    EXPECT_EQ(first.sync_policy().next_average_step(), second.sync_policy().next_average_step());
    // The averaging points after the resume match too, the loss of the period and the count of
    // local steps in it (which began before the checkpoint) included.
    const auto& pa = first.sync_stats().points;
    const auto& pb = second.sync_stats().points;
    ASSERT_GE(pa.size(), pb.size());
    ASSERT_GE(pb.size(), 2u) << "config " << c;
    for (std::size_t i = 0; i < pb.size(); ++i) {
      const AveragingPoint& x = pa[pa.size() - pb.size() + i];
      const AveragingPoint& y = pb[i];
      EXPECT_EQ(x.step, y.step) << "config " << c;
      EXPECT_EQ(x.local_steps, y.local_steps) << "config " << c << " step " << x.step;
      EXPECT_EQ(x.next_k, y.next_k) << "config " << c;
      EXPECT_EQ(x.loss, y.loss) << "config " << c;
    }
  }
}

TEST(LocalSgd, Fp16SendsTheChangeSinceTheLastPointSoRoundingFallsOnTheDelta) {
  // Large weights that drift steadily: fp16 of the weights themselves would be off by up to
  // 2^-6 x 4 (fp16's spacing at 100 / 4); fp16 of each period's small change is not.
  const auto comm = world();
  std::vector<std::vector<float>> results;
  for (const char* compressor : {"none", "fp16"}) {
    std::vector<float> w(kTotal, 100.0f);
    DistributedOptimizer opt(comm, sgd(), {{"w", w.data(), w.size()}},
                             settings({{keys::kSync, "local_sgd"},
                                       {keys::kLocalSgdK, "2"},
                                       {keys::kCompressor, compressor}}));
    for (int step = 0; step < 40; ++step) {
      std::mt19937 rng(static_cast<unsigned>(1000 * step + comm->rank()));
      std::normal_distribution<float> noise(0.0f, 0.1f);
      float* g = opt.gradient(0);
      for (std::size_t i = 0; i < w.size(); ++i) g[i] = 1.0f + noise(rng);
      opt.step();
    }
    results.push_back(w);
  }
  // 20 points, each rounding a change of about -0.1 (-0.1 / n per rank) to fp16: at most half a
  // spacing, 2^-15 for the sum plus 2^-17 per rank's share, about 3.8e-5 a point, 7.6e-4 over
  // the run if every rounding went the same way (the change is nearly the same each time). fp16
  // weights would round by up to 2^-7 at every point; a delta from a stale anchor (the start)
  // would grow to about -2 and round by up to 2^-10.
  EXPECT_LT(max_difference(results[1], results[0]), 1e-3);
  EXPECT_LT(results[0][0], 99.0f);  // the weights did move: 40 steps x 0.05
}

TEST(LocalSgd, LoadRejectsAnotherPolicyAndLeavesEverythingAsItWas) {
  const auto comm = world();
  Model a, b;
  DistributedOptimizer k3(comm, sgd(0.9), a.specs(),
                          settings({{keys::kSync, "local_sgd"}, {keys::kLocalSgdK, "3"}}));
  DistributedOptimizer k4(comm, sgd(0.9), b.specs(),
                          settings({{keys::kSync, "local_sgd"}, {keys::kLocalSgdK, "4"}}));
  train(a, k3, comm->rank(), 0, 5);
  train(b, k4, comm->rank(), 0, 2);
  std::ostringstream from_k3, k4_before, k4_after;
  k3.save_state(from_k3);
  k4.save_state(k4_before);
  std::istringstream in(from_k3.str());
  EXPECT_THROW(k4.load_state(in), std::runtime_error);
  k4.save_state(k4_after);
  EXPECT_EQ(k4_before.str(), k4_after.str());
  EXPECT_EQ(k4.steps(), 2);
}

// An optimizer that does not expose its state.
class Opaque final : public Optimizer {
 public:
  std::string name() const override { return "opaque"; }
  void step(const std::vector<ParameterView>&) override {}
  double learning_rate() const override { return 0.1; }
  void set_learning_rate(double) override {}
  void save_state(std::ostream&) const override {}
  void load_state(std::istream&) override {}
};

TEST(LocalSgd, CombinationsThatMakeNoSenseAreConfigurationErrors) {
  const auto comm = world();
  const auto expect_error = [&](const Settings& s, const std::string& needle,
                                std::unique_ptr<Optimizer> inner = nullptr) {
    Model model;
    try {
      DistributedOptimizer opt(comm, inner ? std::move(inner) : sgd(0.9), model.specs(),
                               settings(s));
      ADD_FAILURE() << "no error for " << needle;
    } catch (const config::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error({{keys::kSync, "local_sgd"}, {keys::kCompressor, "dgc"}},
               "GRADWIRE_SYNC=local_sgd cannot be combined with GRADWIRE_COMPRESSOR=dgc");
  expect_error({{keys::kSync, "post_local_sgd"},
                {keys::kLocalSgdBeginStep, "10"},
                {keys::kCompressor, "topk"}},
               "Use GRADWIRE_COMPRESSOR=none or fp16");
  expect_error({{keys::kLocalSgdK, "8"}},
               "GRADWIRE_LOCAL_SGD_K=8 has no effect under GRADWIRE_SYNC=every_step");
  expect_error({{keys::kSync, "local_sgd"}, {keys::kLocalSgdBeginStep, "100"}},
               "GRADWIRE_LOCAL_SGD_BEGIN_STEP=100 has no effect under GRADWIRE_SYNC=local_sgd");
  expect_error({{keys::kSync, "adaptive_local_sgd"}, {keys::kLocalSgdK, "8"}},
               "GRADWIRE_ADAPTIVE_INIT_K");
  expect_error({{keys::kSync, "local_sgd"}, {keys::kAdaptiveMaxK, "8"}},
               "applies to adaptive_local_sgd");
  expect_error({{keys::kSync, "post_local_sgd"}}, "needs that step (>= 1");
  expect_error({{keys::kSync, "adaptive_local_sgd"}, {keys::kAdaptiveInitK, "20"}},
               "GRADWIRE_ADAPTIVE_INIT_K=20 exceeds GRADWIRE_ADAPTIVE_MAX_K=16");
  expect_error({{keys::kSync, "local_sgd"}, {keys::kGradientReduction, "sum"}},
               "Use GRADWIRE_GRADIENT_REDUCTION=average");
  expect_error({{keys::kLocalSgdAverageState, "1"}},
               "has no effect under GRADWIRE_SYNC=every_step");
  expect_error({{keys::kSync, "local_sgd"}, {keys::kLocalSgdAverageState, "1"}},
               "opaque does not expose it", std::make_unique<Opaque>());
}

}  // namespace
}  // namespace gw
