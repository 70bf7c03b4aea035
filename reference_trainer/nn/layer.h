// The abstract layer of the reference trainer's sequential models.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "reference_trainer/nn/tensor.h"

namespace gw::trainer {

// How Model initialises a parameter.
enum class ParameterInit { kZero, kKaimingUniform };

// One of a layer's parameters. The storage is not the layer's: its owner (Model, or a test) binds
// value and gradient pointers before the first forward(). See Note [Model parameter storage].
struct LayerParameter {
  std::string name;  // "weight", "bias"
  std::size_t numel = 0;
  std::size_t fan_in = 0;  // for Kaiming initialisation
  ParameterInit init = ParameterInit::kZero;
  float* value = nullptr;
  float* grad = nullptr;
};

// forward() computes the output (resized as needed) and, when training, keeps what backward()
// needs (copies, so the caller's tensors may change in between). backward() OVERWRITES the
// parameter gradients of the last training forward() and, unless grad_input is null (the first
// layer of a model needs none), writes the gradient with respect to its input. Once warmed up at a
// batch size neither allocates.
class Layer {
 public:
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  // One line, e.g. "Linear(784->1024)".
  virtual std::string describe() const = 0;
  virtual void forward(const Tensor& input, Tensor& output, bool training) = 0;
  virtual void backward(const Tensor& grad_output, Tensor* grad_input) = 0;

  const std::vector<LayerParameter>& parameters() const { return params_; }
  void bind_value(std::size_t i, float* value);
  void bind_gradient(std::size_t i, float* grad);

 protected:
  Layer() = default;
  void add_parameter(std::string name, std::size_t numel, std::size_t fan_in, ParameterInit init);
  // Both throw std::logic_error naming the layer and parameter when it is not bound.
  const float* value(std::size_t i) const;
  float* grad(std::size_t i) const;
  // Throws std::logic_error when backward() comes without a training forward() before it.
  void require_forward_cache(bool has_cache) const;

 private:
  std::vector<LayerParameter> params_;
};

}  // namespace gw::trainer
