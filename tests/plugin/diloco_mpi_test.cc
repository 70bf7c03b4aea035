// GRADWIRE_SYNC=diloco through DistributedOptimizer under a real mpirun (Note [DiLoCo]): outer lr
// 1 without momentum is local_sgd bit for bit; Nesterov and heavy ball against the closed form of
// their recurrence on quadratics; the compressed pseudo-gradients (topk with error feedback,
// powersgd) leave every rank with the same parameters and send what their plans say; save and
// resume mid-period bit-identically; and the configuration errors, a mismatched H included.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <sstream>

#include "drifting_model.h"
#include "plugin_test_util.h"
#include "reference_trainer/optim/sgd.h"

namespace gw {
namespace {

namespace keys = config::keys;
using testing::identical_on_all_ranks;
using testing::Settings;
using testing::settings;
using testing::sgd;
using testing::with;
using testing::world;

constexpr std::size_t kTotal = testing::TwoTensorModel::kTotal;

using Model = testing::DriftingModel;
using testing::adam;
using testing::train;

TEST(Diloco, OuterLrOneWithoutMomentumIsLocalSgdBitForBit) {
  const auto comm = world();
  const int rank = comm->rank();
  const std::vector<Settings> outers = {
      {{keys::kOuterOptimizer, "nesterov"}, {keys::kOuterLr, "1"}, {keys::kOuterMomentum, "0"}},
      {{keys::kOuterOptimizer, "heavy_ball"}, {keys::kOuterLr, "1"}, {keys::kOuterMomentum, "0"}},
      {{keys::kOuterOptimizer, "average"}, {keys::kOuterLr, "1"}},
  };
  for (const char* compressor : {"none", "fp16"}) {
    for (bool use_adam : {false, true}) {
      const Settings local = {
          {keys::kSync, "local_sgd"}, {keys::kLocalSgdK, "3"}, {keys::kCompressor, compressor}};
      Model reference;
      DistributedOptimizer local_sgd(comm, use_adam ? adam() : sgd(0.9), reference.specs(),
                                     settings(local));
      train(reference, local_sgd, rank, 0, 20);
      local_sgd.synchronize_parameters();  // a requested point after two local steps
      for (std::size_t o = 0; o < outers.size(); ++o) {
        SCOPED_TRACE(std::string(compressor) + (use_adam ? ", adam, outer " : ", sgd, outer ") +
                     std::to_string(o));
        Settings diloco = local;
        diloco[0].second = "diloco";
        Model model;
        DistributedOptimizer opt(comm, use_adam ? adam() : sgd(0.9), model.specs(),
                                 settings(with(diloco, outers[o])));
        train(model, opt, rank, 0, 20);
        opt.synchronize_parameters();
        EXPECT_EQ(std::memcmp(model.flat().data(), reference.flat().data(), kTotal * sizeof(float)),
                  0);
        EXPECT_EQ(opt.sync_stats().parameter_exchanges, 7);  // 6 scheduled, 1 requested
        EXPECT_TRUE(identical_on_all_ranks(*comm, model.flat()));
      }
    }
  }
}

// Rank r's loss 0.5 c_i (w_i - t_ri)^2 per element, under plain SGD at lr eta (no momentum):
// after H inner steps from the anchor a, w = t_r + q (a - t_r) with q = (1 - eta c)^H, so the
// ranks' mean is t + q (a - t) (t the mean target) and the pseudo-gradient (1 - q)(a - t). With
// e = a - t the outer steps are linear in (e, u):
//   nesterov:   u' = mu u + (1-q) e;  e' = e - lr ((1-q) e + mu u')
//   heavy_ball: u' = mu u + (1-q) e;  e' = e - lr u'
// so after T outer steps (e, u) = M^T (e_0, 0), M the 2x2 matrix of the step.
struct Quadratic {
  static constexpr std::size_t kN = 64;
  std::vector<float> w = std::vector<float>(kN);
  std::vector<double> c = std::vector<double>(kN);
  std::vector<double> target_mean = std::vector<double>(kN);

  explicit Quadratic(int ranks) {
    for (std::size_t i = 0; i < kN; ++i) {
      w[i] = 1.0f + 0.05f * static_cast<float>(i);
      c[i] = 0.5 + 0.02 * static_cast<double>(i);
      double sum = 0;
      for (int r = 0; r < ranks; ++r) sum += target(r, i);
      target_mean[i] = sum / ranks;
    }
  }
  static double target(int rank, std::size_t i) {
    return 0.25 * rank - 0.01 * static_cast<double>(i);
  }
  void gradients(DistributedOptimizer& opt, int rank) const {
    float* g = opt.gradient(0);
    for (std::size_t i = 0; i < kN; ++i) {
      g[i] = static_cast<float>(c[i] * (static_cast<double>(w[i]) - target(rank, i)));
    }
  }
};

// The closed form: e after `outer_steps` outer steps, from e0.
double closed_form(double e0, double q, double lr, double mu, bool nesterov, int outer_steps) {
  const double a = 1.0 - q;
  // (e', u') = M (e, u).
  double m[2][2];
  if (nesterov) {
    m[0][0] = 1.0 - lr * a * (1.0 + mu);
    m[0][1] = -lr * mu * mu;
  } else {
    m[0][0] = 1.0 - lr * a;
    m[0][1] = -lr * mu;
  }
  m[1][0] = a;
  m[1][1] = mu;
  double e = e0, u = 0;
  for (int t = 0; t < outer_steps; ++t) {
    const double e2 = m[0][0] * e + m[0][1] * u, u2 = m[1][0] * e + m[1][1] * u;
    e = e2;
    u = u2;
  }
  return e;
}

TEST(Diloco, NesterovAndHeavyBallFollowTheirClosedFormOnQuadratics) {
  const auto comm = world();
  const int rank = comm->rank();
  constexpr int kH = 5, kOuter = 12;  // kH is GRADWIRE_LOCAL_SGD_K below
  constexpr double kEta = 0.05, kLr = 0.7, kMu = 0.9;
  for (const char* rule : {"nesterov", "heavy_ball"}) {
    SCOPED_TRACE(rule);
    Quadratic quad(comm->size());
    const std::vector<float> w0 = quad.w;
    DistributedOptimizer opt(comm, sgd(0.0), {{"w", quad.w.data(), quad.w.size()}},
                             settings({{keys::kSync, "diloco"},
                                       {keys::kLocalSgdK, "5"},
                                       {keys::kOuterOptimizer, rule},
                                       {keys::kOuterLr, "0.7"},
                                       {keys::kOuterMomentum, "0.9"}}));
    for (int step = 0; step < kH * kOuter; ++step) {
      quad.gradients(opt, rank);
      opt.step();
    }
    ASSERT_EQ(opt.sync_stats().parameter_exchanges, kOuter);
    double worst = 0, moved = 0;
    for (std::size_t i = 0; i < Quadratic::kN; ++i) {
      const double q = std::pow(1.0 - kEta * quad.c[i], kH);
      const double e0 = static_cast<double>(w0[i]) - quad.target_mean[i];
      const double expected = quad.target_mean[i] +
                              closed_form(e0, q, kLr, kMu, std::string(rule) == "nesterov", kOuter);
      worst = std::max(worst, std::fabs(static_cast<double>(quad.w[i]) - expected));
      moved = std::max(moved, std::fabs(static_cast<double>(quad.w[i] - w0[i])));
    }
    // fp32 arithmetic over 60 inner and 12 outer steps, against doubles.
    EXPECT_LT(worst, 2e-5) << "moved " << moved;
    EXPECT_GT(moved, 0.1);  // the check is not vacuous
  }
}

TEST(Diloco, CompressedPseudoGradientsLeaveEveryRankWithTheSameParameters) {
  const auto comm = world();
  const int rank = comm->rank(), n = comm->size();
  const Settings base = {{keys::kSync, "diloco"}, {keys::kLocalSgdK, "4"}};
  struct Case {
    Settings settings;
    std::string wire;
  };
  const std::vector<Case> cases = {
      {{{keys::kCompressor, "none"}}, "fp32 parameters"},
      {{{keys::kCompressor, "fp16"}}, "fp16 deltas"},
      {{{keys::kCompressor, "topk"}, {keys::kDgcSparsity, "0.9"}, {keys::kDgcMinK, "1"}},
       "topk deltas"},
      {{{keys::kCompressor, "powersgd"}, {keys::kPowerSgdStartStep, "1"}}, "powersgd deltas"},
      // SparseLoCo's recipe: top-k, 2-bit values, error feedback (Note [Low-bit wire values]).
      {{{keys::kCompressor, "topk"},
        {keys::kDgcSparsity, "0.9"},
        {keys::kDgcMinK, "1"},
        {keys::kSparseWire, "compact2"}},
       "topk deltas"},
  };
  std::vector<std::uint64_t> bytes;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.wire);
    Model model;
    DistributedOptimizer opt(comm, sgd(0.9), model.specs(), settings(with(base, c.settings)));
    const auto before = comm->counters()[TrafficKind::kParameter].sent_bytes;
    int points = 0, diverged = 0;
    for (std::int64_t step = 0; step < 24; ++step) {
      const std::int64_t was = opt.sync_stats().parameter_exchanges;
      train(model, opt, rank, step, step + 1);
      const bool same = identical_on_all_ranks(*comm, model.flat());
      if (opt.sync_stats().parameter_exchanges > was) {
        ++points;
        EXPECT_TRUE(same) << "after the outer step of step " << step;
      } else {
        diverged += same ? 0 : 1;
      }
    }
    EXPECT_EQ(points, 6);
    if (n > 1) EXPECT_GT(diverged, 0);
    EXPECT_EQ(opt.sync_stats().gradient_exchanges, 0);
    EXPECT_EQ(opt.sync_stats().parameter_wire, c.wire);
    EXPECT_EQ(opt.sync_stats().outer_optimizer, "nesterov (lr 0.7, momentum 0.9)");
    EXPECT_EQ(comm->counters()[TrafficKind::kGradient].sent_bytes, 0u);
    bytes.push_back(comm->counters()[TrafficKind::kParameter].sent_bytes - before);
    for (float v : model.flat()) ASSERT_TRUE(std::isfinite(v));
  }
  // fp32 parameters: six allreduces of every float; fp16 half of it; topk and powersgd less;
  // topk's 2-bit values less than its binary16 ones.
  EXPECT_EQ(bytes[0], 6 * CountingCommunicator::allreduce_bytes(kTotal, 4, rank, n));
  EXPECT_EQ(bytes[1], 6 * CountingCommunicator::allreduce_bytes(kTotal, 2, rank, n));
  if (n > 1) {
    EXPECT_LT(bytes[2], bytes[1]);
    EXPECT_LT(bytes[3], bytes[1]);
    EXPECT_LT(bytes[4], bytes[2]);
  }
}

TEST(Diloco, TopkErrorFeedbackCarriesWhatAPointDidNotSend) {
  // With outer lr 1, no momentum and everything sent, diloco is local_sgd; with topk at 90%
  // sparsity most of each pseudo-gradient waits in the residual, so the parameters lag behind,
  // but the residual brings the lagging part along: after a quiet period (zero gradients) the
  // parameters catch up with local_sgd's to within what is still left.
  const auto comm = world();
  const int rank = comm->rank();
  const Settings topk = {
      {keys::kSync, "diloco"}, {keys::kLocalSgdK, "2"},     {keys::kOuterOptimizer, "average"},
      {keys::kOuterLr, "1"},   {keys::kCompressor, "topk"}, {keys::kDgcSparsity, "0.9"},
      {keys::kDgcMinK, "1"}};
  // Gradients that do not depend on w: the inner steps then move every start point alike, and
  // the only difference left between the two runs is what the residual holds.
  Model a, b;
  a.pull = b.pull = [](float) { return 0.0f; };
  DistributedOptimizer diloco(comm, sgd(), a.specs(), settings(topk));
  DistributedOptimizer local(comm, sgd(), b.specs(),
                             settings({{keys::kSync, "local_sgd"}, {keys::kLocalSgdK, "2"}}));
  train(a, diloco, rank, 0, 4);
  train(b, local, rank, 0, 4);
  const auto gap = [&] {
    double worst = 0;
    const std::vector<float> x = a.flat(), y = b.flat();
    for (std::size_t i = 0; i < x.size(); ++i) {
      worst = std::max(worst, std::fabs(static_cast<double>(x[i]) - y[i]));
    }
    return worst;
  };
  const double lagging = gap();
  EXPECT_GT(lagging, 1e-3);
  // Quiet periods: no gradient, so local_sgd stands still and diloco sends its residual, 10% of
  // it (the largest) per point.
  for (int period = 0; period < 40; ++period) {
    for (int s = 0; s < 2; ++s) {
      std::memset(diloco.gradient(0), 0, a.big.size() * sizeof(float));
      std::memset(diloco.gradient(1), 0, a.small.size() * sizeof(float));
      diloco.step();
    }
  }
  // Every element went out within 10 points; what remains is rounding.
  EXPECT_LT(gap(), 1e-4 * lagging) << "from " << lagging;
}

struct Snapshot {
  std::vector<float> params;
  std::string state;
};

TEST(Diloco, SaveThenLoadMidPeriodContinuesBitIdentically) {
  const auto comm = world();
  const int rank = comm->rank();
  const Settings base = {{keys::kSync, "diloco"}, {keys::kLocalSgdK, "3"}};
  const std::vector<Settings> configs = {
      {},
      {{keys::kOuterOptimizer, "heavy_ball"}, {keys::kCompressor, "fp16"}},
      {{keys::kCompressor, "topk"}, {keys::kDgcSparsity, "0.8"}, {keys::kDgcMinK, "1"}},
      {{keys::kCompressor, "powersgd"},
       {keys::kPowerSgdStartStep, "1"},
       {keys::kLocalSgdAverageState, "1"}},
  };
  for (std::size_t c = 0; c < configs.size(); ++c) {
    SCOPED_TRACE("config " + std::to_string(c));
    const Settings s = with(base, configs[c]);
    Model a;
    DistributedOptimizer first(comm, sgd(0.9), a.specs(), settings(s));
    train(a, first, rank, 0, 8);  // mid-period: points after steps 2 and 5
    Snapshot saved{a.flat(), {}};
    std::ostringstream out;
    first.save_state(out);
    saved.state = out.str();
    train(a, first, rank, 8, 20);

    Model b;
    DistributedOptimizer second(comm, sgd(0.9), b.specs(), settings(s));
    b.set(saved.params);
    std::istringstream in(saved.state);
    second.load_state(in);
    train(b, second, rank, 8, 20);
    EXPECT_EQ(std::memcmp(a.flat().data(), b.flat().data(), kTotal * sizeof(float)), 0);

    // Without the outer momentum and the residuals the run would differ: a fresh optimizer that
    // only takes the parameters does.
    Model fresh;
    DistributedOptimizer third(comm, sgd(0.9), fresh.specs(), settings(s));
    fresh.set(saved.params);
    train(fresh, third, rank, 8, 20);
    EXPECT_NE(std::memcmp(a.flat().data(), fresh.flat().data(), kTotal * sizeof(float)), 0);
  }
  // A checkpoint of another outer rule is refused and leaves the optimizer as it was.
  Model x, y;
  DistributedOptimizer nesterov(comm, sgd(0.9), x.specs(), settings(base));
  DistributedOptimizer average(comm, sgd(0.9), y.specs(),
                               settings(with(base, {{keys::kOuterOptimizer, "average"}})));
  train(x, nesterov, rank, 0, 4);
  testing::expect_checkpoint_refused(nesterov, average);
}

TEST(Diloco, CombinationsThatMakeNoSenseAreConfigurationErrors) {
  const auto comm = world();
  const auto expect_error = [&](const Settings& s, const std::string& needle) {
    testing::expect_config_error(comm, s, needle);
  };
  expect_error({{keys::kSync, "diloco"}, {keys::kCompressor, "dgc"}},
               "GRADWIRE_SYNC=diloco cannot be combined with GRADWIRE_COMPRESSOR=dgc: dgc's "
               "momentum correction");
  expect_error({{keys::kSync, "diloco"}, {keys::kCompressor, "auto"}},
               "diloco sends pseudo-gradients at its outer steps");
  expect_error({{keys::kSync, "local_sgd"}, {keys::kOuterLr, "0.5"}},
               "GRADWIRE_OUTER_LR=0.5 has no effect under GRADWIRE_SYNC=local_sgd");
  expect_error({{keys::kOuterOptimizer, "heavy_ball"}},
               "GRADWIRE_OUTER_OPTIMIZER=heavy_ball has no effect under GRADWIRE_SYNC=every_step");
  expect_error(
      {{keys::kSync, "diloco"}, {keys::kOuterOptimizer, "average"}, {keys::kOuterMomentum, "0.5"}},
      "GRADWIRE_OUTER_MOMENTUM=0.5 has no effect under GRADWIRE_OUTER_OPTIMIZER=average");
  expect_error({{keys::kSync, "diloco"}, {keys::kLocalSgdBeginStep, "3"}},
               "has no effect under GRADWIRE_SYNC=diloco");
  expect_error({{keys::kSync, "diloco"}, {keys::kOuterOptimizer, "adam"}},
               "GRADWIRE_OUTER_OPTIMIZER");
  expect_error({{keys::kSync, "diloco"}, {keys::kGradientReduction, "sum"}},
               "Use GRADWIRE_GRADIENT_REDUCTION=average");
}

TEST(Diloco, EveryRankRefusesAnHThatDiffersAcrossRanks) {
  const auto comm = world();
  if (comm->size() < 2) GTEST_SKIP() << "needs a peer";
  Model model;
  try {
    DistributedOptimizer opt(
        comm, sgd(0.9), model.specs(),
        settings({{keys::kSync, "diloco"}, {keys::kLocalSgdK, comm->rank() == 1 ? "8" : "4"}}));
    ADD_FAILURE() << "no error";
  } catch (const config::ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("configuration differs across ranks"), std::string::npos) << what;
    EXPECT_NE(what.find("GRADWIRE_LOCAL_SGD_K: rank 0 '4', rank 1 '8'"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace gw
