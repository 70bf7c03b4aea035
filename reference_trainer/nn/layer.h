// The abstract layer of the reference trainer's sequential models.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "amp/op_policy.h"
#include "kernels/half.h"
#include "reference_trainer/nn/precision.h"
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
  std::size_t rows = 0;    // a weight's leading dimension (outputs); 0 for a vector
  ParameterInit init = ParameterInit::kZero;
  float* value = nullptr;
  float* grad = nullptr;
};

// forward() computes the output (resized as needed) and, when training, keeps what backward()
// needs (copies, so the caller's tensors may change in between). backward() OVERWRITES the
// parameter gradients of the last training forward() and, unless grad_input is null (the first
// layer of a model needs none), writes the gradient with respect to its input. Once warmed up at a
// batch size neither allocates.
//
// Mixed precision: with an op policy set, each forward() runs in the precision the policy gives
// the layer's op for its input's dtype, and its output (and backward's input gradient) has that
// dtype; see Note [CPU rendering of fp16 ops] in reference_trainer/nn/precision.h. Without one
// every tensor is fp32, as before. Inputs may be of either dtype in both cases.
class Layer {
 public:
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  // One line, e.g. "Linear(784->1024)".
  virtual std::string describe() const = 0;
  virtual void forward(const Tensor& input, Tensor& output, bool training) = 0;
  virtual void backward(const Tensor& grad_output, Tensor* grad_input) = 0;
  // The name mixed precision's op lists know this layer by ("linear", "relu", ...).
  virtual const char* op_name() const = 0;

  // Every forward() from now on runs in the precision `policy` decides for op_name(); nullptr (the
  // default) runs everything in fp32. The decisions are taken here, once. Throws
  // std::invalid_argument when the policy does not know op_name().
  void set_op_policy(const amp::OpPolicy* policy);
  // The precision of the last forward() (fp32 before the first).
  amp::Precision precision() const { return precision_; }

  const std::vector<LayerParameter>& parameters() const { return params_; }
  void bind_value(std::size_t i, float* value);
  void bind_gradient(std::size_t i, float* grad);

 protected:
  Layer() = default;
  // rows: the weight's outputs, when it is a matrix [rows, numel / rows]; 0 for a bias.
  void add_parameter(std::string name, std::size_t numel, std::size_t fan_in, ParameterInit init,
                     std::size_t rows = 0);
  // Both throw std::logic_error naming the layer and parameter when it is not bound.
  const float* value(std::size_t i) const;
  float* grad(std::size_t i) const;
  // Throws std::logic_error when backward() comes without a training forward() before it.
  void require_forward_cache(bool has_cache) const;

  // Mixed-precision plumbing for the layers' forward() and backward()
  // (Note [CPU rendering of fp16 ops]). In fp32 without fp16 inputs each is free: no copies, no
  // conversions.
  // First thing in forward(): decides this forward's precision from the input's dtype and, in
  // fp16, refreshes the fp16 working copies of the parameters from the fp32 masters.
  amp::Precision begin_forward(const Tensor& input);
  // Parameter i as this forward reads it: the fp32 master, or (fp16) its working copy, in fp32.
  const float* op_value(std::size_t i) const;
  // forward()'s input / backward()'s incoming gradient as the op reads them, in fp32 (a view of
  // the tensor itself when no conversion is needed; valid until the next call of the same one).
  const float* input_view(const Tensor& input);
  const float* grad_view(const Tensor& grad_output);
  // A cached activation (stored in the op's dtype) in fp32, for backward().
  const float* cache_view(const Tensor& cached);
  // Where to write an fp32 result of `shape` (the output in forward, the input gradient in
  // backward); end_result() then stores it in `out` in the op's dtype.
  float* begin_result(Tensor& out, const Shape& shape);
  void end_result(Tensor& out);
  // In fp16: rounds the gradient just written for parameter i through binary16 (it is the
  // gradient of the fp16 working copy) before it goes to the optimizer.
  void finish_gradient(std::size_t i);
  DType op_dtype() const { return dtype_of(precision_); }

 private:
  std::vector<LayerParameter> params_;
  bool has_policy_ = false;
  amp::Precision if_fp32_input_ = amp::Precision::kFloat32;
  amp::Precision if_fp16_input_ = amp::Precision::kFloat32;
  amp::Precision precision_ = amp::Precision::kFloat32;
  std::vector<std::vector<Half>> half_values_;  // per parameter: the fp16 working copy
  std::vector<std::vector<float>> op_values_;   // the same values in fp32, for the GEMMs
  std::vector<float> input_scratch_, grad_scratch_, cache_scratch_, result_scratch_;
  std::vector<Half> half_scratch_;
  Shape result_shape_;
};

}  // namespace gw::trainer
