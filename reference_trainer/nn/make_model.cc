#include "reference_trainer/nn/make_model.h"

#include <stdexcept>
#include <utility>
#include <vector>

#include "reference_trainer/nn/conv2d.h"
#include "reference_trainer/nn/flatten.h"
#include "reference_trainer/nn/linear.h"
#include "reference_trainer/nn/max_pool2d.h"
#include "reference_trainer/nn/relu.h"

namespace gw::trainer {
namespace {

constexpr std::size_t kImageSide = 28;
constexpr std::size_t kClasses = 10;

template <typename L, typename... Args>
void add(std::vector<ModelLayer>& layers, const char* name, Args... args) {
  layers.push_back(ModelLayer{name, std::make_unique<L>(args...)});
}

std::unique_ptr<Model> make_mlp(const char* kind, std::size_t hidden1, std::size_t hidden2,
                                std::uint64_t seed) {
  std::vector<ModelLayer> layers;
  add<Linear>(layers, "fc1", kImageSide * kImageSide, hidden1);
  add<ReLU>(layers, "relu1");
  add<Linear>(layers, "fc2", hidden1, hidden2);
  add<ReLU>(layers, "relu2");
  add<Linear>(layers, "fc3", hidden2, kClasses);
  return std::make_unique<Model>(kind, Shape{kImageSide * kImageSide}, std::move(layers), seed);
}

std::unique_ptr<Model> make_cnn(std::uint64_t seed) {
  const std::size_t k = 5, stride = 1, pad = 2;
  std::vector<ModelLayer> layers;
  add<Conv2d>(layers, "conv1", std::size_t{1}, std::size_t{16}, k, stride, pad);
  add<ReLU>(layers, "relu1");
  add<MaxPool2d>(layers, "pool1", std::size_t{2});
  add<Conv2d>(layers, "conv2", std::size_t{16}, std::size_t{32}, k, stride, pad);
  add<ReLU>(layers, "relu2");
  add<MaxPool2d>(layers, "pool2", std::size_t{2});
  add<Flatten>(layers, "flatten");
  add<Linear>(layers, "fc1", std::size_t{32 * 7 * 7}, std::size_t{128});
  add<ReLU>(layers, "relu3");
  add<Linear>(layers, "fc2", std::size_t{128}, kClasses);
  return std::make_unique<Model>("cnn", Shape{1, kImageSide, kImageSide}, std::move(layers), seed);
}

}  // namespace

std::unique_ptr<Model> make_model(const std::string& kind, std::uint64_t seed) {
  if (kind == "mlp") return make_mlp("mlp", 1024, 512, seed);
  if (kind == "mlp-small") return make_mlp("mlp-small", 64, 32, seed);
  if (kind == "cnn") return make_cnn(seed);
  throw std::invalid_argument("unknown model kind '" + kind +
                              "' (expected one of: mlp, mlp-small, cnn)");
}

}  // namespace gw::trainer
