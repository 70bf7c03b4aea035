// Adam's first two steps against the closed form, and its option checks.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "reference_trainer/optim/adam.h"

namespace gw::trainer {
namespace {

// The closed form of one step, in double.
struct Reference {
  double lr, b1, b2, eps, wd;
  std::vector<double> w, m, v;
  int t = 0;
  void step(const std::vector<double>& g) {
    ++t;
    for (std::size_t i = 0; i < w.size(); ++i) {
      const double d = g[i] + wd * w[i];
      m[i] = b1 * m[i] + (1 - b1) * d;
      v[i] = b2 * v[i] + (1 - b2) * d * d;
      const double m_hat = m[i] / (1 - std::pow(b1, t));
      const double v_hat = v[i] / (1 - std::pow(b2, t));
      w[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
  }
};

void check_two_steps(const Adam::Options& o) {
  std::vector<float> w = {1.0f, -0.5f, 0.0f, 2.0f};
  const std::vector<std::vector<float>> grads = {{0.5f, -2.0f, 0.0f, 1e-3f},
                                                 {-1.0f, 1.0f, 0.0f, 3.0f}};
  Reference ref{o.lr,
                o.beta1,
                o.beta2,
                o.eps,
                o.weight_decay,
                std::vector<double>(w.begin(), w.end()),
                std::vector<double>(4, 0.0),
                std::vector<double>(4, 0.0)};
  Adam adam(o);
  for (const auto& g : grads) {
    adam.step({{"p", w.data(), g.data(), w.size()}});
    ref.step(std::vector<double>(g.begin(), g.end()));
    for (std::size_t i = 0; i < w.size(); ++i) {
      EXPECT_NEAR(w[i], ref.w[i], 2e-6) << "step " << ref.t << " element " << i;
    }
  }
}

TEST(AdamTest, FirstStepMovesEachWeightByLrTimesTheGradientSign) {
  // m_hat = g, v_hat = g^2 after one step: w -= lr * g / (|g| + eps).
  Adam adam(Adam::Options{0.1});
  std::vector<float> w = {1.0f, -0.5f, 0.0f};
  const std::vector<float> g = {0.5f, -2.0f, 0.0f};
  adam.step({{"p", w.data(), g.data(), w.size()}});
  EXPECT_NEAR(w[0], 0.9f, 1e-6);
  EXPECT_NEAR(w[1], -0.4f, 1e-6);
  EXPECT_EQ(w[2], 0.0f);  // zero gradient, zero moments: no move
  EXPECT_EQ(adam.steps(), 1u);
  EXPECT_EQ(adam.name(), "adam");
}

TEST(AdamTest, TwoStepsMatchTheClosedForm) { check_two_steps(Adam::Options{0.1}); }

TEST(AdamTest, TwoStepsWithOtherBetasAndWeightDecay) {
  check_two_steps(Adam::Options{0.05, 0.5, 0.75, 1e-3, 0.5});
}

TEST(AdamTest, LearningRateChangeAppliesToTheNextStep) {
  Adam adam(Adam::Options{0.1});
  std::vector<float> w = {0.0f};
  const std::vector<float> g = {1.0f};
  adam.set_learning_rate(0.25);
  EXPECT_EQ(adam.learning_rate(), 0.25);
  adam.step({{"p", w.data(), g.data(), 1}});
  EXPECT_NEAR(w[0], -0.25f, 1e-6);
}

TEST(AdamTest, RejectsBadOptionsAndLayoutChanges) {
  EXPECT_THROW(Adam(Adam::Options{}), std::invalid_argument);
  EXPECT_THROW(Adam(Adam::Options{0.1, 1.0}), std::invalid_argument);
  EXPECT_THROW(Adam(Adam::Options{0.1, 0.9, -0.1}), std::invalid_argument);
  EXPECT_THROW(Adam(Adam::Options{0.1, 0.9, 0.999, 0.0}), std::invalid_argument);
  EXPECT_THROW(Adam(Adam::Options{0.1, 0.9, 0.999, 1e-8, -1.0}), std::invalid_argument);
  Adam adam(Adam::Options{0.1});
  EXPECT_THROW(adam.set_learning_rate(-1.0), std::invalid_argument);
  std::vector<float> w(3, 0.0f), g(3, 1.0f);
  adam.step({{"p", w.data(), g.data(), 3}});
  EXPECT_THROW(adam.step({{"p", w.data(), g.data(), 2}}), std::invalid_argument);
}

}  // namespace
}  // namespace gw::trainer
