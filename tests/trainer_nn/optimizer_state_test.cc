// save_state/load_state of Sgd and Adam: bit-identical continuation, and load errors.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "reference_trainer/optim/adam.h"
#include "reference_trainer/optim/sgd.h"
#include "test_util.h"

namespace gw::trainer {
namespace {

// Two parameters of the given sizes with random values; gradients come from a seeded stream so
// that two copies see the same sequence.
struct Params {
  Params(std::size_t a, std::size_t b) : w(2), g(2) {
    std::mt19937_64 rng(99);
    w[0].resize(a);
    w[1].resize(b);
    for (auto& v : w) testing::fill_uniform(v.data(), v.size(), rng, -1.0f, 1.0f);
    g[0].resize(a);
    g[1].resize(b);
  }
  std::vector<gw::ParameterView> views() {
    return {{"a", w[0].data(), g[0].data(), w[0].size()},
            {"b", w[1].data(), g[1].data(), w[1].size()}};
  }
  void next_gradients(std::mt19937_64& rng) {
    for (auto& v : g) testing::fill_uniform(v.data(), v.size(), rng, -1.0f, 1.0f);
  }
  std::vector<std::vector<float>> w, g;
};

void run(gw::Optimizer& opt, Params& p, std::mt19937_64& rng, int steps) {
  for (int i = 0; i < steps; ++i) {
    p.next_gradients(rng);
    opt.step(p.views());
  }
}

bool bitwise_equal(const Params& a, const Params& b) {
  for (std::size_t k = 0; k < a.w.size(); ++k) {
    if (a.w[k].size() != b.w[k].size() ||
        std::memcmp(a.w[k].data(), b.w[k].data(), a.w[k].size() * sizeof(float)) != 0) {
      return false;
    }
  }
  return true;
}

std::string saved(const gw::Optimizer& opt) {
  std::ostringstream out;
  opt.save_state(out);
  return out.str();
}

void expect_load_error(gw::Optimizer& opt, const std::string& bytes, const std::string& needle) {
  std::istringstream in(bytes);
  try {
    opt.load_state(in);
    FAIL() << "load accepted; expected an error mentioning '" << needle << "'";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

using Factory = std::unique_ptr<gw::Optimizer> (*)();
std::unique_ptr<gw::Optimizer> momentum_sgd() {
  return std::make_unique<Sgd>(Sgd::Options{0.05, 0.9, true, 1e-3});
}
std::unique_ptr<gw::Optimizer> plain_sgd() { return std::make_unique<Sgd>(Sgd::Options{0.05}); }
std::unique_ptr<gw::Optimizer> adam() {
  return std::make_unique<Adam>(Adam::Options{0.01, 0.9, 0.999, 1e-8, 1e-2});
}

class OptimizerStateTest : public ::testing::TestWithParam<Factory> {};

TEST_P(OptimizerStateTest, ResumedRunContinuesBitIdentically) {
  auto original = GetParam()();
  Params p(5, 37);
  std::mt19937_64 grads(7);
  run(*original, p, grads, 3);
  const std::string state = saved(*original);

  // A fresh optimizer, loaded before its first step, resumes from the same parameters.
  auto resumed = GetParam()();
  std::istringstream in(state);
  resumed->load_state(in);
  Params q = p;
  std::mt19937_64 grads_copy = grads;
  run(*original, p, grads, 4);
  run(*resumed, q, grads_copy, 4);
  EXPECT_TRUE(bitwise_equal(p, q));
  EXPECT_EQ(saved(*original), saved(*resumed));
}

TEST_P(OptimizerStateTest, StateSavedBeforeAnyStepLoads) {
  auto a = GetParam()();
  auto b = GetParam()();
  std::istringstream in(saved(*a));
  b->load_state(in);
  Params p(3, 4);
  Params q = p;
  std::mt19937_64 ga(1), gb(1);
  run(*a, p, ga, 2);
  run(*b, q, gb, 2);
  EXPECT_TRUE(bitwise_equal(p, q));
}

TEST_P(OptimizerStateTest, LoadErrorsNameTheMismatchAndKeepTheState) {
  auto opt = GetParam()();
  Params p(5, 37);
  std::mt19937_64 grads(3);
  run(*opt, p, grads, 2);
  const std::string good = saved(*opt);

  expect_load_error(*opt, good.substr(0, good.size() - 3), "truncated");
  expect_load_error(*opt, good.substr(0, 5), "truncated");
  expect_load_error(*opt, "not a state stream at all", "magic");

  // Another optimizer type.
  auto other = opt->name() == "adam" ? momentum_sgd() : adam();
  Params o(5, 37);
  run(*other, o, grads, 1);
  expect_load_error(*opt, saved(*other), "'" + other->name() + "' state");

  // Another layout.
  auto differently_shaped = GetParam()();
  Params d(5, 36);
  run(*differently_shaped, d, grads, 1);
  expect_load_error(*opt, saved(*differently_shaped), "parameter 1 has 36 elements");

  // None of that changed the state.
  EXPECT_EQ(saved(*opt), good);
}

INSTANTIATE_TEST_SUITE_P(Optimizers, OptimizerStateTest,
                         ::testing::Values(&momentum_sgd, &plain_sgd, &adam));

TEST(OptimizerStateTest, SgdMomentumStateDoesNotLoadIntoPlainSgd) {
  auto with_momentum = momentum_sgd();
  Params p(2, 2);
  std::mt19937_64 grads(1);
  run(*with_momentum, p, grads, 1);
  auto plain = plain_sgd();
  expect_load_error(*plain, saved(*with_momentum), "buffers per parameter");
}

TEST(OptimizerStateTest, LoadedLayoutIsEnforcedAtTheNextStep) {
  auto a = adam();
  Params p(5, 37);
  std::mt19937_64 grads(1);
  run(*a, p, grads, 1);
  auto b = adam();
  std::istringstream in(saved(*a));
  b->load_state(in);
  Params other(5, 36);
  EXPECT_THROW(b->step(other.views()), std::invalid_argument);
}

}  // namespace
}  // namespace gw::trainer
