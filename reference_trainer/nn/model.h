// A sequential stack of layers ending in softmax cross-entropy: what the reference trainer trains.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "reference_trainer/nn/layer.h"
#include "reference_trainer/nn/shape.h"
#include "reference_trainer/nn/softmax_cross_entropy.h"
#include "reference_trainer/nn/tensor.h"

namespace gw::trainer {

// Note [Model parameter storage]
// All parameter values live in one contiguous buffer owned by the Model, in registration order
// (layer by layer; within a layer weight, then bias). Gradients are written to storage that is
// bound from outside (bind_gradients): the distributed optimizer owns one flat gradient buffer
// and hands out a view per parameter, so the all-reduce can run on buckets of it without copies.
// Until then the Model writes them to its own buffer, so it is usable on its own.

// A layer and the name its parameters are registered under ("fc1" -> "fc1.weight").
struct ModelLayer {
  std::string name;
  std::unique_ptr<Layer> layer;
};

class Model {
 public:
  struct Parameter {
    std::string name;
    float* value;
    std::size_t numel;
    std::size_t rows = 0;  // LayerParameter::rows
  };
  using GradientReadyFn = std::function<void(std::size_t param_index)>;

  // sample_shape: one sample without the batch dimension ({784}, or {1, 28, 28} for a CNN); the
  // flat inputs are reshaped to it. Parameters are initialised from seed (Kaiming uniform weights,
  // zero biases, drawn in registration order from std::mt19937_64). Runs one sample through the
  // stack to check that the layers fit together; throws std::invalid_argument if they do not.
  Model(std::string kind, const Shape& sample_shape, std::vector<ModelLayer> layers,
        std::uint64_t seed);
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const std::string& kind() const { return kind_; }
  // One line: kind, the layers and the parameter count.
  std::string describe() const;
  const Shape& sample_shape() const { return sample_shape_; }
  std::size_t input_size() const { return sample_shape_.numel(); }
  std::size_t num_classes() const { return num_classes_; }

  // The layers, in order (a DeviceModel is built from them).
  const std::vector<ModelLayer>& layers() const { return layers_; }
  const std::vector<Parameter>& parameters() const { return params_; }
  std::size_t num_parameters() const { return values_.size(); }
  // The contiguous value buffer (num_parameters() floats); parameters()[i].value point into it.
  float* parameter_buffer() { return values_.data(); }
  const float* parameter_buffer() const { return values_.data(); }

  // Where parameter i's gradient is written: the model's own buffer, or the bound view.
  const float* gradient(std::size_t i) const { return grads_.at(i); }

  // Where each parameter's gradient is written from now on: grads[i] holds parameters()[i].numel
  // floats. Throws std::invalid_argument on a wrong count or a null pointer.
  void bind_gradients(const std::vector<float*>& grads);

  // Mixed precision: every layer and the loss run in the precision `policy` decides for their op
  // (Note [CPU rendering of fp16 ops]); nullptr (the default) runs everything in fp32. The
  // parameters stay fp32 (the master weights). Throws std::invalid_argument, changing nothing,
  // when the policy does not know one of the model's ops.
  void set_op_policy(const amp::OpPolicy* policy);
  // The op of every layer, in order, then the loss's ("linear", "relu", ...,
  // "softmax_cross_entropy").
  std::vector<std::string> op_names() const;
  // The precision each of them ran in at the last forward (same order as op_names()).
  std::vector<amp::Precision> precisions() const;
  // What the last forward kept: [0] the input, [i + 1] layer i's output (its dtype is the one
  // layer i ran in).
  const Tensor& activation(std::size_t i) const { return activations_.at(i); }

  // images: batch x input_size() floats; labels: batch values below num_classes(). Runs forward
  // and backward, OVERWRITES every parameter's gradient with that of loss_scale times the mean
  // loss over the batch (mixed precision's loss scaling; 1 otherwise) and returns the mean loss,
  // unscaled. As soon as a layer's gradients are final it calls
  // on_gradient_ready(i) for each of its parameters, so the calls come in reverse registration
  // order (last parameter first), once per parameter. Allocates nothing once warmed up at a batch
  // size.
  float forward_backward(const float* images, const std::uint8_t* labels, std::size_t batch,
                         const GradientReadyFn& on_gradient_ready = {}, float loss_scale = 1.0f);

  // Forward only. Adds the SUM of the per-sample losses to *loss_sum and the number of correct
  // argmax predictions to *correct (either may be null when not wanted).
  void evaluate(const float* images, const std::uint8_t* labels, std::size_t batch,
                double* loss_sum, std::int64_t* correct);

 private:
  void check_batch(const float* images, const std::uint8_t* labels, std::size_t batch,
                   const char* who) const;
  const Tensor& run_forward(const float* images, std::size_t batch, bool training);

  std::string kind_;
  Shape sample_shape_;
  std::vector<ModelLayer> layers_;
  std::vector<std::size_t> first_param_;  // per layer: index of its first parameter
  std::vector<Parameter> params_;
  std::vector<float> values_;
  std::vector<float> own_grads_;  // used until bind_gradients()
  std::vector<float*> grads_;     // per parameter: where its gradient is written
  std::size_t num_classes_ = 0;
  SoftmaxCrossEntropy loss_;
  std::vector<Tensor> activations_;  // [0] the input, [i + 1] layer i's output
  Tensor grad_a_;                    // ping-pong gradient buffers for backward
  Tensor grad_b_;
};

// Throws std::invalid_argument, naming `who`, unless `grads` has one non-null view per parameter.
void check_gradient_views(const std::vector<Model::Parameter>& params,
                          const std::vector<float*>& grads, const char* who);

}  // namespace gw::trainer
