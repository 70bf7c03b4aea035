// Sgd and Adam apply ParameterView::grad_scale (Note [Who divides by the world size]): a step on
// the summed gradient with grad_scale 1/n is bit-identical to a step on the gradient already
// divided by n.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <vector>

#include "reference_trainer/optim/adam.h"
#include "reference_trainer/optim/sgd.h"

namespace gw::trainer {
namespace {

template <typename Opt, typename Options>
void expect_scale_folds_in(const Options& options) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  constexpr std::size_t n = 37;
  std::vector<float> w_folded(n), w_divided(n), sum(n), divided(n);
  for (std::size_t i = 0; i < n; ++i) w_folded[i] = w_divided[i] = u(rng);
  Opt folded(options), pre_divided(options);
  ASSERT_TRUE(folded.accepts_gradient_scale());
  for (int step = 0; step < 4; ++step) {
    for (std::size_t i = 0; i < n; ++i) {
      sum[i] = u(rng);
      divided[i] = sum[i] * 0.25f;
    }
    folded.step({{"p", w_folded.data(), sum.data(), n, 0.25f}});
    pre_divided.step({{"p", w_divided.data(), divided.data(), n, 1.0f}});
  }
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(w_folded[i], w_divided[i]) << i;
}

TEST(GradientScale, SgdPlain) { expect_scale_folds_in<Sgd>(Sgd::Options{0.1, 0.0, false, 0.0}); }
TEST(GradientScale, SgdMomentumWeightDecay) {
  expect_scale_folds_in<Sgd>(Sgd::Options{0.1, 0.9, false, 0.01});
}
TEST(GradientScale, SgdNesterov) { expect_scale_folds_in<Sgd>(Sgd::Options{0.1, 0.9, true, 0.0}); }
TEST(GradientScale, Adam) {
  expect_scale_folds_in<Adam>(Adam::Options{0.01, 0.9, 0.999, 1e-8, 0.01});
}

}  // namespace
}  // namespace gw::trainer
