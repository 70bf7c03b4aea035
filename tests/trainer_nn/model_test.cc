// The Model contract with the distributed optimizer: parameter layout, gradient binding,
// overwrite semantics and the gradient-ready callbacks. And make_model.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "reference_trainer/nn/make_model.h"
#include "test_util.h"

namespace gw::trainer {
namespace {

struct Batch {
  std::vector<float> images;
  std::vector<std::uint8_t> labels;
};

Batch random_batch(std::size_t n, std::size_t features, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Batch b{std::vector<float>(n * features), std::vector<std::uint8_t>(n)};
  testing::fill_uniform(b.images.data(), b.images.size(), rng, 0.0f, 1.0f);
  for (auto& l : b.labels) l = static_cast<std::uint8_t>(rng() % 10);
  return b;
}

std::vector<float> gradient_copy(const Model& m) {
  std::vector<float> g;
  for (std::size_t i = 0; i < m.parameters().size(); ++i) {
    const float* p = m.gradient(i);
    g.insert(g.end(), p, p + m.parameters()[i].numel);
  }
  return g;
}

TEST(MakeModelTest, MlpLayoutAndSize) {
  const auto m = make_model("mlp", 1);
  EXPECT_EQ(m->kind(), "mlp");
  EXPECT_EQ(m->num_parameters(), 1333770u);
  EXPECT_GE(m->num_parameters(), 1000000u);
  EXPECT_EQ(m->input_size(), 784u);
  EXPECT_EQ(m->num_classes(), 10u);
  const std::vector<std::string> names = {"fc1.weight", "fc1.bias",   "fc2.weight",
                                          "fc2.bias",   "fc3.weight", "fc3.bias"};
  const std::vector<std::size_t> sizes = {784 * 1024, 1024, 1024 * 512, 512, 512 * 10, 10};
  ASSERT_EQ(m->parameters().size(), names.size());
  const float* expected_start = m->parameter_buffer();
  for (std::size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(m->parameters()[i].name, names[i]);
    EXPECT_EQ(m->parameters()[i].numel, sizes[i]);
    EXPECT_EQ(m->parameters()[i].value, expected_start) << "contiguous, registration order";
    expected_start += sizes[i];
  }
  EXPECT_NE(m->describe().find("mlp:"), std::string::npos);
  EXPECT_NE(m->describe().find("fc1=Linear(784->1024)"), std::string::npos);
  EXPECT_NE(m->describe().find("1333770 parameters"), std::string::npos);
}

TEST(MakeModelTest, SmallMlpIsTheMlpNarrowed) {
  const auto m = make_model("mlp-small", 1);
  EXPECT_EQ(m->kind(), "mlp-small");
  EXPECT_EQ(m->num_parameters(), 52650u);
  const std::vector<std::size_t> sizes = {784 * 64, 64, 64 * 32, 32, 32 * 10, 10};
  ASSERT_EQ(m->parameters().size(), sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) EXPECT_EQ(m->parameters()[i].numel, sizes[i]);
  EXPECT_NE(m->describe().find("fc1=Linear(784->64)"), std::string::npos);
  EXPECT_THROW(make_model("mlp-tiny", 1), std::invalid_argument);
}

TEST(MakeModelTest, CnnLayoutAndSize) {
  const auto m = make_model("cnn", 1);
  EXPECT_EQ(m->num_parameters(), 215370u);
  EXPECT_EQ(m->sample_shape(), (Shape{1, 28, 28}));
  const std::vector<std::string> names = {"conv1.weight", "conv1.bias", "conv2.weight",
                                          "conv2.bias",   "fc1.weight", "fc1.bias",
                                          "fc2.weight",   "fc2.bias"};
  ASSERT_EQ(m->parameters().size(), names.size());
  for (std::size_t i = 0; i < names.size(); ++i) EXPECT_EQ(m->parameters()[i].name, names[i]);
  EXPECT_EQ(m->parameters()[2].numel, 32u * 16 * 5 * 5);
  EXPECT_NE(m->describe().find("conv1=Conv2d(1->16, k5, s1, p2)"), std::string::npos);
}

TEST(MakeModelTest, InitIsDeterministicPerSeedAndKaiming) {
  const auto a = make_model("mlp", 42);
  const auto b = make_model("mlp", 42);
  const auto c = make_model("mlp", 43);
  const std::size_t bytes = a->num_parameters() * sizeof(float);
  EXPECT_EQ(std::memcmp(a->parameter_buffer(), b->parameter_buffer(), bytes), 0);
  EXPECT_NE(std::memcmp(a->parameter_buffer(), c->parameter_buffer(), bytes), 0);
  for (const auto& p : a->parameters()) {
    const bool bias = p.name.find(".bias") != std::string::npos;
    const std::size_t fan_in = p.name == "fc1.weight" ? 784 : p.name == "fc2.weight" ? 1024 : 512;
    const float bound = std::sqrt(6.0f / static_cast<float>(fan_in));
    float lo = 0, hi = 0;
    for (std::size_t i = 0; i < p.numel; ++i) {
      lo = std::min(lo, p.value[i]);
      hi = std::max(hi, p.value[i]);
    }
    if (bias) {
      EXPECT_EQ(lo, 0.0f) << p.name;
      EXPECT_EQ(hi, 0.0f) << p.name;
    } else {
      EXPECT_GE(lo, -bound) << p.name;
      EXPECT_LE(hi, bound) << p.name;
      EXPECT_LT(lo, -0.9f * bound) << p.name << " spans the range";
      EXPECT_GT(hi, 0.9f * bound) << p.name << " spans the range";
    }
  }
  const auto cnn_a = make_model("cnn", 5);
  const auto cnn_b = make_model("cnn", 5);
  EXPECT_EQ(std::memcmp(cnn_a->parameter_buffer(), cnn_b->parameter_buffer(),
                        cnn_a->num_parameters() * sizeof(float)),
            0);
}

TEST(MakeModelTest, RejectsUnknownKind) {
  try {
    make_model("rnn", 1);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'rnn'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("mlp, mlp-small, cnn"), std::string::npos) << e.what();
  }
}

class ModelContractTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ModelContractTest, ForwardBackwardOverwritesGradients) {
  const auto m = make_model(GetParam(), 3);
  const Batch b = random_batch(8, m->input_size(), 4);
  const float loss1 = m->forward_backward(b.images.data(), b.labels.data(), 8);
  const std::vector<float> g1 = gradient_copy(*m);
  const float loss2 = m->forward_backward(b.images.data(), b.labels.data(), 8);
  const std::vector<float> g2 = gradient_copy(*m);
  EXPECT_EQ(loss1, loss2);
  EXPECT_TRUE(std::isfinite(loss1));
  EXPECT_GT(loss1, 0.0f);
  ASSERT_EQ(g1.size(), m->num_parameters());
  EXPECT_EQ(std::memcmp(g1.data(), g2.data(), g1.size() * sizeof(float)), 0) << "not accumulated";
  double norm = 0;
  for (float g : g1) norm += double{g} * g;
  EXPECT_GT(norm, 0.0);
}

TEST_P(ModelContractTest, GradientReadyInReverseOrderOnceAndFinal) {
  const auto m = make_model(GetParam(), 3);
  const std::size_t n_params = m->parameters().size();
  // External storage filled with NaN: a parameter reported before its gradient is written would
  // show NaN in its snapshot.
  std::vector<float> flat(m->num_parameters(), std::numeric_limits<float>::quiet_NaN());
  std::vector<float*> views;
  std::size_t offset = 0;
  for (const auto& p : m->parameters()) {
    views.push_back(flat.data() + offset);
    offset += p.numel;
  }
  m->bind_gradients(views);
  const Batch b = random_batch(4, m->input_size(), 5);
  std::vector<std::size_t> order;
  std::vector<std::vector<float>> snapshots(n_params);
  m->forward_backward(b.images.data(), b.labels.data(), 4, [&](std::size_t i) {
    ASSERT_LT(i, n_params);
    order.push_back(i);
    snapshots[i].assign(views[i], views[i] + m->parameters()[i].numel);
  });
  ASSERT_EQ(order.size(), n_params);
  for (std::size_t k = 0; k < n_params; ++k) EXPECT_EQ(order[k], n_params - 1 - k);
  for (std::size_t i = 0; i < n_params; ++i) {
    ASSERT_EQ(snapshots[i].size(), m->parameters()[i].numel);
    for (std::size_t j = 0; j < snapshots[i].size(); ++j) {
      ASSERT_FALSE(std::isnan(snapshots[i][j])) << m->parameters()[i].name << "[" << j << "]";
      ASSERT_EQ(snapshots[i][j], views[i][j]) << m->parameters()[i].name << " changed after ready";
    }
  }
}

TEST_P(ModelContractTest, BoundGradientsLandInExternalStorage) {
  const auto internal = make_model(GetParam(), 9);
  const auto external = make_model(GetParam(), 9);
  std::vector<float> flat(external->num_parameters(), -7.0f);
  std::vector<float*> views;
  std::size_t offset = 0;
  for (const auto& p : external->parameters()) {
    views.push_back(flat.data() + offset);
    offset += p.numel;
  }
  external->bind_gradients(views);
  for (std::size_t i = 0; i < views.size(); ++i) EXPECT_EQ(external->gradient(i), views[i]);
  const Batch b = random_batch(6, internal->input_size(), 10);
  internal->forward_backward(b.images.data(), b.labels.data(), 6);
  external->forward_backward(b.images.data(), b.labels.data(), 6);
  const std::vector<float> expected = gradient_copy(*internal);
  EXPECT_EQ(std::memcmp(flat.data(), expected.data(), flat.size() * sizeof(float)), 0);
}

TEST_P(ModelContractTest, EvaluateAddsLossSumAndCorrectCount) {
  const auto m = make_model(GetParam(), 3);
  const std::size_t n = 16;
  const Batch b = random_batch(n, m->input_size(), 6);
  const float mean = m->forward_backward(b.images.data(), b.labels.data(), n);
  double loss_sum = 1.0;  // evaluate adds to what is there
  std::int64_t correct = 2;
  m->evaluate(b.images.data(), b.labels.data(), n, &loss_sum, &correct);
  EXPECT_NEAR((loss_sum - 1.0) / n, mean, 1e-5);
  EXPECT_GE(correct, 2);
  EXPECT_LE(correct, static_cast<std::int64_t>(n) + 2);
  // Labels set to the model's own predictions: all correct.
  Batch predicted = b;
  std::int64_t base = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::uint8_t label = 0; label < 10; ++label) {
      predicted.labels[i] = label;
      std::int64_t c = 0;
      m->evaluate(predicted.images.data() + i * m->input_size(), &predicted.labels[i], 1, nullptr,
                  &c);
      if (c == 1) break;
    }
  }
  m->evaluate(predicted.images.data(), predicted.labels.data(), n, nullptr, &base);
  EXPECT_EQ(base, static_cast<std::int64_t>(n));
}

TEST_P(ModelContractTest, RejectsBadCalls) {
  const auto m = make_model(GetParam(), 3);
  const Batch b = random_batch(2, m->input_size(), 7);
  EXPECT_THROW(m->forward_backward(b.images.data(), b.labels.data(), 0), std::invalid_argument);
  EXPECT_THROW(m->forward_backward(nullptr, b.labels.data(), 2), std::invalid_argument);
  const std::uint8_t bad[] = {1, 10};
  EXPECT_THROW(m->forward_backward(b.images.data(), bad, 2), std::invalid_argument);
  EXPECT_THROW(m->bind_gradients({}), std::invalid_argument);
  std::vector<float*> nulls(m->parameters().size(), nullptr);
  EXPECT_THROW(m->bind_gradients(nulls), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(Kinds, ModelContractTest, ::testing::Values("mlp", "mlp-small", "cnn"));

}  // namespace
}  // namespace gw::trainer
