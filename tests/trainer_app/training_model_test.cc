// The GPU mode's training model (make_device_training_model: the data set copied where the stream
// works, batches gathered there, gpu::DeviceModel) on the host stream against the CPU mode's, on
// a small synthetic data set: the same losses, gradients, evaluations and parameters, bit for bit
// (Note [The trainer on a device]).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/device.h"
#include "kernels/stream.h"
#include "reference_trainer/app/training_model.h"

namespace gw::trainer {
namespace {

Dataset synthetic(std::size_t n, std::mt19937_64& rng) {
  Dataset d;
  d.rows = d.cols = 28;
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  for (std::size_t i = 0; i < n * d.features(); ++i) d.images.push_back(pixel(rng));
  for (std::size_t i = 0; i < n; ++i) d.labels.push_back(static_cast<std::uint8_t>(rng() % 10));
  return d;
}

// Gradients into a flat buffer of the test's own, as the DistributedOptimizer binds them.
std::vector<float*> bind(TrainingModel& m, std::vector<float>& flat) {
  flat.assign(m.num_parameters(), 0.0f);
  std::vector<float*> views;
  std::size_t at = 0;
  for (const ParameterSpec& p : m.parameter_specs()) {
    views.push_back(flat.data() + at);
    at += p.numel;
  }
  m.bind_gradients(views);
  return views;
}

class DeviceTrainingModelOnTheHost : public ::testing::TestWithParam<const char*> {};

TEST_P(DeviceTrainingModelOnTheHost, TrainsAsTheCpuMode) {
  std::mt19937_64 rng(3);
  FashionMnist data;
  data.train = synthetic(200, rng);
  data.test = synthetic(60, rng);
  const kernels::Stream host = kernels::Stream::host();
  const auto cpu = make_training_model(GetParam(), 9, data, host);
  const auto dev = make_device_training_model(GetParam(), 9, data, host);
  ASSERT_EQ(dev->num_parameters(), cpu->num_parameters());
  std::vector<float> cpu_grads, dev_grads;
  bind(*cpu, cpu_grads);
  bind(*dev, dev_grads);
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    std::vector<std::size_t> rows;
    for (int i = 0; i < 12; ++i) rows.push_back(static_cast<std::size_t>(rng() % 200));
    std::vector<std::size_t> cpu_order, dev_order;
    const float a = cpu->train_step(
        rows, [&](std::size_t i) { cpu_order.push_back(i); }, 1.0f);
    const float b = dev->train_step(
        rows, [&](std::size_t i) { dev_order.push_back(i); }, 1.0f);
    EXPECT_EQ(a, b);
    EXPECT_EQ(cpu_order, dev_order);
    ASSERT_EQ(std::memcmp(cpu_grads.data(), dev_grads.data(), cpu_grads.size() * 4), 0);
    // The same update through set_parameters: parameters() and set_parameters() must be each
    // other's inverse for the next step to agree.
    std::vector<float> w = cpu->parameters();
    ASSERT_EQ(w, dev->parameters());
    for (std::size_t i = 0; i < w.size(); ++i) w[i] -= 0.1f * cpu_grads[i];
    cpu->set_parameters(w.data());
    dev->set_parameters(w.data());
    double cpu_loss = 0, dev_loss = 0;
    std::int64_t cpu_correct = 0, dev_correct = 0;
    cpu->evaluate_test(7, 60, &cpu_loss, &cpu_correct);
    dev->evaluate_test(7, 60, &dev_loss, &dev_correct);
    EXPECT_EQ(cpu_loss, dev_loss);
    EXPECT_EQ(cpu_correct, dev_correct);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, DeviceTrainingModelOnTheHost, ::testing::Values("mlp", "cnn"));

// Without a usable GPU (this machine, or a build without CUDA) the GPU mode says why before the
// run starts. Where a GPU is usable there is nothing to refuse.
TEST(CheckDeviceUsable, SaysWhyTheGpuModeCannotRun) {
  if (kernels::cuda_device_available()) GTEST_SKIP() << "a CUDA device is usable here";
  try {
    check_device_usable();
    FAIL() << "accepted";
  } catch (const DeviceError& e) {
    const std::string msg = e.what();
    EXPECT_TRUE(msg.find("built without CUDA") != std::string::npos ||
                msg.find("no usable CUDA device") != std::string::npos)
        << msg;
  }
}

}  // namespace
}  // namespace gw::trainer
