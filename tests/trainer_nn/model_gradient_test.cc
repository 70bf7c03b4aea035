// Whole-model finite-difference checks of forward_backward() on tiny models built like
// make_model's.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "reference_trainer/nn/conv2d.h"
#include "reference_trainer/nn/flatten.h"
#include "reference_trainer/nn/linear.h"
#include "reference_trainer/nn/max_pool2d.h"
#include "reference_trainer/nn/model.h"
#include "reference_trainer/nn/relu.h"
#include "test_util.h"

namespace gw::trainer {
namespace {
// A bias moves a unit's pre-activation for the whole batch, so perturbations cross ReLU kinks
// (and max-pool near-ties) far more often than in the layer tests: a smaller step, and elements
// whose one-sided differences disagree by more than curvature and rounding explain are skipped
// as kinks (see testing::kink_aware_gradient).
constexpr float kModelEps = 1e-3f;
constexpr double kKinkRtol = 1e-2;
constexpr double kKinkAtol = 2e-3;

template <typename L, typename... Args>
ModelLayer layer(const char* name, Args... args) {
  return ModelLayer{name, std::make_unique<L>(static_cast<std::size_t>(args)...)};
}

std::unique_ptr<Model> tiny_mlp(std::uint64_t seed) {
  std::vector<ModelLayer> layers;
  layers.push_back(layer<Linear>("fc1", 6, 5));
  layers.push_back(layer<ReLU>("relu1"));
  layers.push_back(layer<Linear>("fc2", 5, 4));
  layers.push_back(layer<ReLU>("relu2"));
  layers.push_back(layer<Linear>("fc3", 4, 3));
  return std::make_unique<Model>("tiny-mlp", Shape{6}, std::move(layers), seed);
}

// Two convolutions, so the second one's input gradient (col2im) is exercised through the model.
std::unique_ptr<Model> tiny_cnn(std::uint64_t seed) {
  std::vector<ModelLayer> layers;
  layers.push_back(layer<Conv2d>("conv1", 1, 2, 3, 1, 1));
  layers.push_back(layer<ReLU>("relu1"));
  layers.push_back(layer<MaxPool2d>("pool1", 2));
  layers.push_back(layer<Conv2d>("conv2", 2, 3, 3, 1, 1));
  layers.push_back(layer<ReLU>("relu2"));
  layers.push_back(layer<Flatten>("flatten"));
  layers.push_back(layer<Linear>("fc", 3 * 3 * 3, 4));
  return std::make_unique<Model>("tiny-cnn", Shape{1, 6, 6}, std::move(layers), seed);
}

void check_model_gradients(Model& m, std::uint64_t data_seed) {
  const std::size_t batch = 3;
  std::mt19937_64 rng(data_seed);
  std::vector<float> images(batch * m.input_size());
  testing::fill_uniform(images.data(), images.size(), rng, 0.0f, 1.0f);
  std::vector<std::uint8_t> labels(batch);
  for (auto& l : labels) l = static_cast<std::uint8_t>(rng() % m.num_classes());
  // Non-zero biases (make_model starts them at zero), so that their effect is exercised too.
  for (const auto& p : m.parameters()) {
    if (p.name.find(".bias") != std::string::npos) {
      testing::fill_uniform(p.value, p.numel, rng, -0.2f, 0.2f);
    }
  }
  m.forward_backward(images.data(), labels.data(), batch);
  const auto mean_loss = [&] {
    double sum = 0.0;
    m.evaluate(images.data(), labels.data(), batch, &sum, nullptr);
    return sum / batch;
  };
  std::size_t checked = 0;
  std::size_t kinks = 0;
  for (std::size_t i = 0; i < m.parameters().size(); ++i) {
    const auto& p = m.parameters()[i];
    const auto numeric =
        testing::kink_aware_gradient(p.value, p.numel, kModelEps, mean_loss, kKinkRtol, kKinkAtol);
    const auto c =
        testing::compare_gradients(m.gradient(i), numeric.central, 1e-2, 1e-3, &numeric.kink);
    EXPECT_TRUE(c.ok()) << m.kind() << " " << p.name << ": " << c.to_string();
    checked += p.numel - numeric.kinks;
    kinks += numeric.kinks;
  }
  // The check must not be vacuous: at this step kinks hit a few elements at most (over 600
  // random tiny models, never more than 13%).
  EXPECT_LE(kinks * 4, checked + kinks) << kinks << " kinks, " << checked << " elements checked";
}

TEST(ModelGradientTest, TinyMlp) {
  const auto m = tiny_mlp(21);
  check_model_gradients(*m, 22);
}

TEST(ModelGradientTest, TinyCnn) {
  const auto m = tiny_cnn(23);
  check_model_gradients(*m, 24);
}

TEST(ModelGradientTest, RejectsLayersThatDoNotFit) {
  std::vector<ModelLayer> layers;
  layers.push_back(layer<Linear>("fc1", 6, 5));
  layers.push_back(layer<Linear>("fc2", 4, 3));  // expects 4 inputs, gets 5
  EXPECT_THROW(Model("bad", Shape{6}, std::move(layers), 1), std::invalid_argument);
  std::vector<ModelLayer> twice;
  twice.push_back(layer<Linear>("fc", 6, 5));
  twice.push_back(layer<Linear>("fc", 5, 3));
  EXPECT_THROW(Model("bad", Shape{6}, std::move(twice), 1), std::invalid_argument);
  EXPECT_THROW(Model("bad", Shape{6}, {}, 1), std::invalid_argument);
}

}  // namespace
}  // namespace gw::trainer
