// Every layer's backward() against central finite differences of its forward().
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "reference_trainer/nn/conv2d.h"
#include "reference_trainer/nn/flatten.h"
#include "reference_trainer/nn/linear.h"
#include "reference_trainer/nn/max_pool2d.h"
#include "reference_trainer/nn/relu.h"
#include "reference_trainer/nn/softmax_cross_entropy.h"
#include "test_util.h"

namespace gw::trainer {
namespace {

using testing::compare_gradients;
using testing::numeric_gradient;

// The perturbation is large enough that float rounding stays far below the tolerance, and the
// inputs keep every kink (ReLU at 0, max-pool ties) further away than it.
constexpr float kEps = 1e-2f;
constexpr double kRtol = 1e-2;
constexpr double kAtol = 1e-3;

// Checks backward() of a layer for L = sum(output * r) with a fixed random r, so that
// dL/doutput = r: the input gradient and every parameter gradient against finite differences.
void check_layer_gradients(Layer& layer, Tensor input, std::mt19937_64& rng) {
  testing::OwnedParameters params(layer, rng);
  Tensor output;
  layer.forward(input, output, true);
  const Tensor r = testing::random_tensor(output.shape(), rng);
  Tensor grad_input;
  layer.backward(r, &grad_input);
  ASSERT_EQ(grad_input.shape(), input.shape());

  Tensor probe;
  const auto loss = [&] {
    layer.forward(input, probe, false);
    double sum = 0.0;
    for (std::size_t i = 0; i < probe.numel(); ++i) sum += double{probe[i]} * r[i];
    return sum;
  };
  const auto dx = numeric_gradient(input.data(), input.numel(), kEps, loss);
  const auto cx = compare_gradients(grad_input.data(), dx, kRtol, kAtol);
  EXPECT_TRUE(cx.ok()) << layer.describe() << " input gradient: " << cx.to_string();
  for (std::size_t p = 0; p < params.values.size(); ++p) {
    const auto dp = numeric_gradient(params.values[p].data(), params.values[p].size(), kEps, loss);
    const auto cp = compare_gradients(params.grads[p].data(), dp, kRtol, kAtol);
    EXPECT_TRUE(cp.ok()) << layer.describe() << " gradient of " << layer.parameters()[p].name
                         << ": " << cp.to_string();
  }
}

TEST(LayerGradientTest, Linear) {
  std::mt19937_64 rng(1);
  Linear layer(5, 4);
  check_layer_gradients(layer, testing::random_tensor({3, 5}, rng), rng);
}

TEST(LayerGradientTest, Conv2dSamePadding) {
  std::mt19937_64 rng(2);
  Conv2d layer(2, 3, 3, 1, 1);
  check_layer_gradients(layer, testing::random_tensor({3, 2, 6, 6}, rng), rng);
}

TEST(LayerGradientTest, Conv2dStrideAndPadding) {
  std::mt19937_64 rng(3);
  Conv2d layer(2, 3, 3, 2, 1);
  check_layer_gradients(layer, testing::random_tensor({2, 2, 7, 6}, rng), rng);
}

TEST(LayerGradientTest, Conv2dNoPaddingRaggedStride) {
  std::mt19937_64 rng(4);
  Conv2d layer(1, 2, 2, 2, 0);  // 5x5 with stride 2: the last row and column are never read
  check_layer_gradients(layer, testing::random_tensor({2, 1, 5, 5}, rng), rng);
}

TEST(LayerGradientTest, ReLUAwayFromTheKink) {
  std::mt19937_64 rng(5);
  Tensor x = testing::random_tensor({3, 7}, rng);
  for (std::size_t i = 0; i < x.numel(); ++i) x[i] += x[i] >= 0.0f ? 0.1f : -0.1f;
  ReLU layer;
  check_layer_gradients(layer, x, rng);
}

TEST(LayerGradientTest, MaxPoolWithoutTies) {
  std::mt19937_64 rng(6);
  // Distinct values 0.1 apart in a random order: no perturbation can change a window's argmax.
  Tensor x({3, 2, 4, 5});
  std::vector<std::size_t> order(x.numel());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  for (std::size_t i = 0; i < x.numel(); ++i) x[i] = 0.1f * static_cast<float>(order[i]) - 5.0f;
  MaxPool2d layer(2);
  check_layer_gradients(layer, x, rng);
}

TEST(LayerGradientTest, Flatten) {
  std::mt19937_64 rng(7);
  Flatten layer;
  check_layer_gradients(layer, testing::random_tensor({3, 2, 2, 3}, rng), rng);
}

TEST(LayerGradientTest, SoftmaxCrossEntropyMeanLoss) {
  std::mt19937_64 rng(8);
  Tensor logits = testing::random_tensor({3, 5}, rng, -2.0f, 2.0f);
  const std::vector<std::uint8_t> labels = {4, 0, 2};
  SoftmaxCrossEntropy loss;
  loss.forward(logits, labels.data());
  Tensor grad;
  loss.backward(grad);
  ASSERT_EQ(grad.shape(), logits.shape());
  SoftmaxCrossEntropy probe;
  const auto dz = numeric_gradient(logits.data(), logits.numel(), kEps,
                                   [&] { return double{probe.forward(logits, labels.data())}; });
  const auto c = compare_gradients(grad.data(), dz, kRtol, kAtol);
  EXPECT_TRUE(c.ok()) << c.to_string();
  // Each row of (softmax - onehot) / N sums to zero.
  for (std::size_t r = 0; r < 3; ++r) {
    double sum = 0.0;
    for (std::size_t c2 = 0; c2 < 5; ++c2) sum += grad[r * 5 + c2];
    EXPECT_NEAR(sum, 0.0, 1e-7);
  }
}

// The tolerances must catch a wrong gradient, not just pass a right one.
TEST(LayerGradientTest, ComparisonRejectsAWrongGradient) {
  std::mt19937_64 rng(9);
  Linear layer(5, 4);
  testing::OwnedParameters params(layer, rng);
  Tensor x = testing::random_tensor({3, 5}, rng);
  Tensor y;
  layer.forward(x, y, true);
  const Tensor r = testing::random_tensor(y.shape(), rng);
  layer.backward(r, nullptr);
  const auto dw = numeric_gradient(params.values[0].data(), params.values[0].size(), kEps, [&] {
    Tensor probe;
    layer.forward(x, probe, false);
    double sum = 0.0;
    for (std::size_t i = 0; i < probe.numel(); ++i) sum += double{probe[i]} * r[i];
    return sum;
  });
  ASSERT_TRUE(compare_gradients(params.grads[0].data(), dw, kRtol, kAtol).ok());
  std::vector<float> scaled = params.grads[0];
  for (float& g : scaled) g *= 1.03f;  // 3% off
  EXPECT_FALSE(compare_gradients(scaled.data(), dw, kRtol, kAtol).ok());
  std::vector<float> swapped = params.grads[0];
  std::swap(swapped[0], swapped[1]);  // two entries exchanged
  EXPECT_FALSE(compare_gradients(swapped.data(), dw, kRtol, kAtol).ok());
}

}  // namespace
}  // namespace gw::trainer
