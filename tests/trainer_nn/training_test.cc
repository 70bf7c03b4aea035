// Short training runs on synthetic separable data: the models and optimizers learn.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "reference_trainer/nn/make_model.h"
#include "reference_trainer/optim/adam.h"
#include "reference_trainer/optim/sgd.h"
#include "test_util.h"

namespace gw::trainer {
namespace {

// Ten classes, each a random prototype image; a sample is 0.5 prototype + 0.5 uniform noise.
struct Dataset {
  Dataset(std::size_t n, std::size_t features, std::uint64_t seed)
      : images(n * features), labels(n) {
    std::mt19937_64 rng(seed);
    std::vector<float> prototypes(10 * features);
    testing::fill_uniform(prototypes.data(), prototypes.size(), rng, 0.0f, 1.0f);
    for (std::size_t i = 0; i < n; ++i) {
      labels[i] = static_cast<std::uint8_t>(i % 10);
      for (std::size_t f = 0; f < features; ++f) {
        images[i * features + f] =
            0.5f * prototypes[labels[i] * features + f] + 0.5f * uniform_float(rng);
      }
    }
  }
  std::vector<float> images;
  std::vector<std::uint8_t> labels;
};

struct Result {
  float first_loss;
  float last_epoch_loss;
  double accuracy;
};

Result train(Model& m, gw::Optimizer& opt, const Dataset& data, std::size_t batch, int epochs) {
  std::vector<gw::ParameterView> views;
  for (std::size_t i = 0; i < m.parameters().size(); ++i) {
    const auto& p = m.parameters()[i];
    views.push_back({p.name, p.value, m.gradient(i), p.numel});
  }
  const std::size_t n = data.labels.size();
  const std::size_t f = m.input_size();
  Result r{0, 0, 0};
  for (int e = 0; e < epochs; ++e) {
    double sum = 0;
    std::size_t steps = 0;
    for (std::size_t s = 0; s + batch <= n; s += batch, ++steps) {
      const float loss = m.forward_backward(&data.images[s * f], &data.labels[s], batch);
      if (e == 0 && s == 0) r.first_loss = loss;
      sum += loss;
      opt.step(views);
    }
    r.last_epoch_loss = static_cast<float>(sum / steps);
  }
  std::int64_t correct = 0;
  m.evaluate(data.images.data(), data.labels.data(), n, nullptr, &correct);
  r.accuracy = static_cast<double>(correct) / n;
  return r;
}

TEST(TrainingTest, MlpWithSgdLearnsASeparableProblem) {
  const auto m = make_model("mlp", 1);
  Sgd sgd(Sgd::Options{0.05, 0.9});
  const Dataset data(320, 784, 2);
  const Result r = train(*m, sgd, data, 32, 4);
  EXPECT_GT(r.first_loss, 1.5f);
  EXPECT_LT(r.last_epoch_loss, 0.2f * r.first_loss) << "first " << r.first_loss;
  EXPECT_GE(r.accuracy, 0.95);
}

// White-noise prototypes suit a CNN less than an MLP (pooling blurs them), hence more epochs.
TEST(TrainingTest, CnnWithSgdLearnsASeparableProblem) {
  const auto m = make_model("cnn", 1);
  Sgd sgd(Sgd::Options{0.02, 0.9});
  const Dataset data(160, 784, 3);
  const Result r = train(*m, sgd, data, 32, 8);
  EXPECT_LT(r.last_epoch_loss, 0.5f * r.first_loss) << "first " << r.first_loss;
  EXPECT_GE(r.accuracy, 0.9);
}

TEST(TrainingTest, MlpWithAdamLearnsASeparableProblem) {
  const auto m = make_model("mlp", 1);
  Adam adam(Adam::Options{1e-3});
  const Dataset data(320, 784, 4);
  const Result r = train(*m, adam, data, 32, 3);
  EXPECT_LT(r.last_epoch_loss, 0.2f * r.first_loss) << "first " << r.first_loss;
  EXPECT_GE(r.accuracy, 0.95);
}

}  // namespace
}  // namespace gw::trainer
