#include "reference_trainer/nn/layer.h"

#include <stdexcept>
#include <utility>

namespace gw::trainer {

void Layer::add_parameter(std::string name, std::size_t numel, std::size_t fan_in,
                          ParameterInit init) {
  LayerParameter p;
  p.name = std::move(name);
  p.numel = numel;
  p.fan_in = fan_in;
  p.init = init;
  params_.push_back(std::move(p));
}

void Layer::bind_value(std::size_t i, float* value) { params_.at(i).value = value; }

void Layer::bind_gradient(std::size_t i, float* grad) { params_.at(i).grad = grad; }

const float* Layer::value(std::size_t i) const {
  const LayerParameter& p = params_[i];
  if (p.value == nullptr) {
    throw std::logic_error(describe() + ": parameter '" + p.name + "' has no value storage bound");
  }
  return p.value;
}

float* Layer::grad(std::size_t i) const {
  const LayerParameter& p = params_[i];
  if (p.grad == nullptr) {
    throw std::logic_error(describe() + ": parameter '" + p.name +
                           "' has no gradient storage bound");
  }
  return p.grad;
}

void Layer::require_forward_cache(bool has_cache) const {
  if (!has_cache) {
    throw std::logic_error(describe() + ": backward() without a training forward() before it");
  }
}

}  // namespace gw::trainer
