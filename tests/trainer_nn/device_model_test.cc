// DeviceModel on the host stream against the CPU Model it was built from
// (Note [The model on a stream]): the same losses, gradients (bit for bit, in the same
// gradient_ready order), evaluations and, after updates, parameters, for the MLP and the CNN, in
// fp32 and under mixed precision.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "amp/op_policy.h"
#include "kernels/stream.h"
#include "reference_trainer/gpu/device_model.h"
#include "reference_trainer/nn/make_model.h"

namespace gw::trainer {
namespace {

struct Batch {
  std::vector<float> images;
  std::vector<std::uint8_t> labels;
};

Batch random_batch(std::size_t batch, std::size_t input, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  std::uniform_int_distribution<int> label(0, 9);
  Batch b;
  for (std::size_t i = 0; i < batch * input; ++i) b.images.push_back(pixel(rng));
  for (std::size_t i = 0; i < batch; ++i) b.labels.push_back(static_cast<std::uint8_t>(label(rng)));
  return b;
}

bool same_bits(const float* a, const float* b, std::size_t n) {
  return std::memcmp(a, b, n * sizeof(float)) == 0;
}

// Mixed precision's op lists for the test: none (fp32), the standard lists, every op in fp16
// (the loss too), and relu denied (an fp32 op between fp16 ones: the next op rounds again).
enum class Amp { kOff, kDefaults, kAllHalf, kDenyRelu };

std::unique_ptr<amp::OpPolicy> policy_for(Amp a) {
  if (a == Amp::kOff) return nullptr;
  auto p = std::make_unique<amp::OpPolicy>(amp::OpPolicy::defaults());
  if (a == Amp::kAllHalf) p->apply_overrides("softmax_cross_entropy", "");
  if (a == Amp::kDenyRelu) p->apply_overrides("", "relu");
  return p;
}

class DeviceModelOnTheHost : public ::testing::TestWithParam<std::tuple<const char*, Amp>> {};

TEST_P(DeviceModelOnTheHost, ComputesTheCpuModelsBits) {
  const std::string kind = std::get<0>(GetParam());
  const std::unique_ptr<Model> cpu = make_model(kind, 11);
  gpu::DeviceModel dev(*cpu, kernels::Stream::host());
  const std::unique_ptr<amp::OpPolicy> policy = policy_for(std::get<1>(GetParam()));
  cpu->set_op_policy(policy.get());
  dev.set_op_policy(policy.get());
  ASSERT_EQ(dev.num_parameters(), cpu->num_parameters());
  ASSERT_EQ(dev.parameters().size(), cpu->parameters().size());
  for (std::size_t i = 0; i < dev.parameters().size(); ++i) {
    EXPECT_EQ(dev.parameters()[i].name, cpu->parameters()[i].name);
  }
  ASSERT_TRUE(same_bits(dev.parameter_buffer(), cpu->parameter_buffer(), cpu->num_parameters()));
  // The device model's gradients in a buffer of its own, as the DistributedOptimizer binds them.
  std::vector<float> flat(cpu->num_parameters(), -1.0f);
  std::vector<float*> views;
  for (std::size_t i = 0, at = 0; i < cpu->parameters().size(); ++i) {
    views.push_back(flat.data() + at);
    at += cpu->parameters()[i].numel;
  }
  dev.bind_gradients(views);

  std::mt19937_64 rng(5);
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const Batch b = random_batch(kind == "cnn" ? 8 : 32, cpu->input_size(), rng);
    std::vector<std::size_t> cpu_order, dev_order;
    const float scale = step == 1 ? 1024.0f : 1.0f;  // a loss scale reaches every gradient
    const float cpu_loss = cpu->forward_backward(
        b.images.data(), b.labels.data(), b.labels.size(),
        [&](std::size_t i) { cpu_order.push_back(i); }, scale);
    const float dev_loss = dev.forward_backward(
        b.images.data(), b.labels.data(), b.labels.size(),
        [&](std::size_t i) { dev_order.push_back(i); }, scale);
    EXPECT_EQ(dev_loss, cpu_loss);
    EXPECT_EQ(dev_order, cpu_order);
    for (std::size_t i = 0; i < cpu->parameters().size(); ++i) {
      EXPECT_EQ(dev.gradient(i), views[i]);
      EXPECT_TRUE(same_bits(dev.gradient(i), cpu->gradient(i), cpu->parameters()[i].numel))
          << cpu->parameters()[i].name;
    }
    double cpu_sum = 0.0, dev_sum = 0.0;
    std::int64_t cpu_correct = 0, dev_correct = 0;
    cpu->evaluate(b.images.data(), b.labels.data(), b.labels.size(), &cpu_sum, &cpu_correct);
    dev.evaluate(b.images.data(), b.labels.data(), b.labels.size(), &dev_sum, &dev_correct);
    EXPECT_EQ(dev_sum, cpu_sum);
    EXPECT_EQ(dev_correct, cpu_correct);
    // The same update on both: the next step starts from the same parameters only if both
    // models read their parameters from their buffers.
    for (std::size_t i = 0; i < cpu->parameters().size(); ++i) {
      float* wc = cpu->parameters()[i].value;
      float* wd = dev.parameters()[i].value;
      for (std::size_t j = 0; j < cpu->parameters()[i].numel; ++j) {
        wc[j] -= 0.05f / scale * cpu->gradient(i)[j];
        wd[j] -= 0.05f / scale * dev.gradient(i)[j];
      }
    }
  }
  EXPECT_TRUE(same_bits(dev.parameter_buffer(), cpu->parameter_buffer(), cpu->num_parameters()));
}

INSTANTIATE_TEST_SUITE_P(Models, DeviceModelOnTheHost,
                         ::testing::Combine(::testing::Values("mlp", "cnn"),
                                            ::testing::Values(Amp::kOff, Amp::kDefaults,
                                                              Amp::kAllHalf, Amp::kDenyRelu)));

// The products counted by precision: under the standard lists every linear and convolution pass
// runs with fp16 operands, without a policy none does.
TEST(DeviceModel, MixedPrecisionMovesTheAllowListedProductsToFp16) {
  for (const char* kind : {"mlp", "cnn"}) {
    SCOPED_TRACE(kind);
    const std::unique_ptr<Model> cpu = make_model(kind, 1);
    gpu::DeviceModel dev(*cpu, kernels::Stream::host());
    std::mt19937_64 rng(4);
    const Batch b = random_batch(4, cpu->input_size(), rng);
    dev.forward_backward(b.images.data(), b.labels.data(), 4);
    // mlp: 3 linear layers, 3 products each (forward, weight and input gradients) less the first
    // layer's input gradient; cnn: 2 convolutions and 2 linear layers, the same way.
    const std::int64_t per_step = std::string(kind) == "mlp" ? 8 : 11;
    EXPECT_EQ(dev.fp32_products(), per_step);
    EXPECT_EQ(dev.fp16_products(), 0);
    const amp::OpPolicy policy = amp::OpPolicy::defaults();
    dev.set_op_policy(&policy);
    dev.forward_backward(b.images.data(), b.labels.data(), 4);
    EXPECT_EQ(dev.fp32_products(), per_step);
    EXPECT_EQ(dev.fp16_products(), per_step);
  }
}

TEST(DeviceModel, ALabelOutOfRangeIsRefusedNamingTheSample) {
  const std::unique_ptr<Model> cpu = make_model("mlp", 1);
  gpu::DeviceModel dev(*cpu, kernels::Stream::host());
  std::mt19937_64 rng(2);
  Batch b = random_batch(4, cpu->input_size(), rng);
  b.labels[2] = 10;
  for (const bool train : {true, false}) {
    try {
      if (train) {
        dev.forward_backward(b.images.data(), b.labels.data(), 4);
      } else {
        dev.evaluate(b.images.data(), b.labels.data(), 4, nullptr, nullptr);
      }
      ADD_FAILURE() << "label 10 accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("label 10 of sample 2 is not below 10 classes"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(DeviceModel, BindGradientsRefusesAWrongCountOrANullView) {
  const std::unique_ptr<Model> cpu = make_model("mlp", 1);
  gpu::DeviceModel dev(*cpu, kernels::Stream::host());
  std::vector<float> g(cpu->num_parameters());
  EXPECT_THROW(dev.bind_gradients({g.data()}), std::invalid_argument);
  std::vector<float*> views(cpu->parameters().size(), g.data());
  views.back() = nullptr;
  EXPECT_THROW(dev.bind_gradients(views), std::invalid_argument);
}

}  // namespace
}  // namespace gw::trainer
