// Sgd against hand-computed steps (values chosen exact in float) and its option checks.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "reference_trainer/optim/sgd.h"

namespace gw::trainer {
namespace {

// One parameter tensor with its gradient, as the optimizer sees it.
struct Param {
  std::vector<float> w;
  std::vector<float> g;
  std::vector<gw::ParameterView> views() { return {{"p", w.data(), g.data(), w.size()}}; }
};

TEST(SgdTest, PlainStep) {
  Sgd sgd(Sgd::Options{0.5});
  Param p{{1.0f, -2.0f}, {0.5f, 1.0f}};
  sgd.step(p.views());
  EXPECT_EQ(p.w, (std::vector<float>{0.75f, -2.5f}));
  EXPECT_EQ(sgd.name(), "sgd");
  EXPECT_EQ(sgd.steps(), 1u);
}

TEST(SgdTest, WeightDecayIsAddedToTheGradient) {
  Sgd sgd(Sgd::Options{0.5, 0.0, false, 0.25});
  Param p{{1.0f, -2.0f}, {0.5f, 1.0f}};
  sgd.step(p.views());  // g' = [0.75, 0.5]
  EXPECT_EQ(p.w, (std::vector<float>{0.625f, -2.25f}));
}

TEST(SgdTest, MomentumStartsWithTheGradient) {
  Sgd sgd(Sgd::Options{0.5, 0.5});
  Param p{{1.0f}, {1.0f}};
  sgd.step(p.views());  // buf = 1, w = 1 - 0.5
  EXPECT_EQ(p.w[0], 0.5f);
  p.g[0] = 2.0f;
  sgd.step(p.views());  // buf = 0.5 * 1 + 2 = 2.5, w = 0.5 - 1.25
  EXPECT_EQ(p.w[0], -0.75f);
}

TEST(SgdTest, Nesterov) {
  Sgd sgd(Sgd::Options{0.5, 0.5, true});
  Param p{{1.0f}, {1.0f}};
  sgd.step(p.views());  // buf = 1, d = 1 + 0.5 * 1 = 1.5, w = 1 - 0.75
  EXPECT_EQ(p.w[0], 0.25f);
  p.g[0] = 2.0f;
  sgd.step(p.views());  // buf = 2.5, d = 2 + 1.25 = 3.25, w = 0.25 - 1.625
  EXPECT_EQ(p.w[0], -1.375f);
}

TEST(SgdTest, ReleasedMomentumStepsPlainSgdWithWeightDecay) {
  // GRADWIRE_COMPRESSOR=dgc takes the momentum over (Note [DGC takes over the momentum]).
  Sgd sgd(Sgd::Options{0.5, 0.5, true, 0.5});
  const auto m = sgd.sgd_momentum();
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->momentum, 0.5);
  EXPECT_TRUE(m->nesterov);
  sgd.release_momentum();
  EXPECT_TRUE(sgd.momentum_released());
  Param p{{1.0f}, {1.0f}};
  sgd.step(p.views());  // no buffer: w = 1 - 0.5 * (1 + 0.5 * 1)
  EXPECT_EQ(p.w[0], 0.25f);
  sgd.step(p.views());  // w = 0.25 - 0.5 * (1 + 0.125)
  EXPECT_EQ(p.w[0], -0.3125f);
  // Too late once a step has been taken with momentum.
  Sgd late(Sgd::Options{0.5, 0.5});
  late.step(p.views());
  EXPECT_THROW(late.release_momentum(), std::logic_error);
}

TEST(SgdTest, MomentumWithWeightDecay) {
  Sgd sgd(Sgd::Options{0.5, 0.5, false, 0.5});
  Param p{{1.0f}, {1.0f}};
  sgd.step(p.views());  // g' = 1.5, buf = 1.5, w = 1 - 0.75
  EXPECT_EQ(p.w[0], 0.25f);
  sgd.step(p.views());  // g' = 1.125, buf = 0.75 + 1.125 = 1.875, w = 0.25 - 0.9375
  EXPECT_EQ(p.w[0], -0.6875f);
}

// Lengths around the vector width, several parameters: every element follows the scalar rule.
TEST(SgdTest, EveryElementOfEveryParameterAgreesWithTheScalarRule) {
  for (bool nesterov : {false, true}) {
    Sgd sgd(Sgd::Options{0.25, 0.5, nesterov, 0.125});
    std::vector<Param> params;
    for (std::size_t n : {1u, 3u, 4u, 7u, 33u}) {
      Param p;
      for (std::size_t i = 0; i < n; ++i) {
        p.w.push_back(static_cast<float>(static_cast<int>(i % 9) - 4) / 8.0f);
        p.g.push_back(static_cast<float>(static_cast<int>(i % 5) - 2) / 4.0f);
      }
      params.push_back(p);
    }
    std::vector<Param> expected = params;
    std::vector<std::vector<float>> bufs;
    for (const auto& p : params) bufs.emplace_back(p.w.size(), 0.0f);
    std::vector<gw::ParameterView> views;
    for (auto& p : params) views.push_back({"p", p.w.data(), p.g.data(), p.w.size()});
    for (int step = 0; step < 3; ++step) {
      sgd.step(views);
      for (std::size_t k = 0; k < expected.size(); ++k) {
        for (std::size_t i = 0; i < expected[k].w.size(); ++i) {
          float& w = expected[k].w[i];
          const float g = expected[k].g[i] + 0.125f * w;
          bufs[k][i] = 0.5f * bufs[k][i] + g;
          w -= 0.25f * (nesterov ? g + 0.5f * bufs[k][i] : bufs[k][i]);
        }
        EXPECT_EQ(params[k].w, expected[k].w) << "param " << k << " step " << step;
      }
    }
  }
}

TEST(SgdTest, RejectsBadOptions) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(Sgd(Sgd::Options{}), std::invalid_argument);  // lr must be set
  EXPECT_THROW(Sgd(Sgd::Options{-0.1}), std::invalid_argument);
  EXPECT_THROW(Sgd(Sgd::Options{nan}), std::invalid_argument);
  EXPECT_THROW(Sgd(Sgd::Options{0.1, 1.0}), std::invalid_argument);
  EXPECT_THROW(Sgd(Sgd::Options{0.1, -0.5}), std::invalid_argument);
  EXPECT_THROW(Sgd(Sgd::Options{0.1, 0.0, false, -1.0}), std::invalid_argument);
  try {
    Sgd(Sgd::Options{0.1, 0.0, true});
    FAIL() << "nesterov without momentum accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("nesterov"), std::string::npos) << e.what();
  }
  Sgd sgd(Sgd::Options{0.1});
  EXPECT_THROW(sgd.set_learning_rate(0.0), std::invalid_argument);
  sgd.set_learning_rate(0.5);
  EXPECT_EQ(sgd.learning_rate(), 0.5);
}

TEST(SgdTest, RejectsALayoutChangeAndNullPointers) {
  Sgd sgd(Sgd::Options{0.1, 0.9});
  Param a{{1, 2, 3}, {1, 1, 1}};
  Param b{{1, 2}, {1, 1}};
  sgd.step(a.views());
  EXPECT_THROW(sgd.step(b.views()), std::invalid_argument);
  std::vector<gw::ParameterView> two = a.views();
  two.push_back(b.views()[0]);
  EXPECT_THROW(sgd.step(two), std::invalid_argument);
  std::vector<gw::ParameterView> null_grad = a.views();
  null_grad[0].grad = nullptr;
  EXPECT_THROW(sgd.step(null_grad), std::invalid_argument);
}

}  // namespace
}  // namespace gw::trainer
