#include "reference_trainer/nn/layer.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "kernels/elementwise.h"

namespace gw::trainer {

void Layer::add_parameter(std::string name, std::size_t numel, std::size_t fan_in,
                          ParameterInit init, std::size_t rows) {
  LayerParameter p;
  p.rows = rows;
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

void Layer::set_op_policy(const amp::OpPolicy* policy) {
  has_policy_ = policy != nullptr;
  if (has_policy_) {
    if_fp32_input_ = policy->decide(op_name(), /*any_input_fp32=*/true);
    if_fp16_input_ = policy->decide(op_name(), /*any_input_fp32=*/false);
  } else {
    if_fp32_input_ = if_fp16_input_ = amp::Precision::kFloat32;
  }
  half_values_.resize(params_.size());
  op_values_.resize(params_.size());
}

amp::Precision Layer::begin_forward(const Tensor& input) {
  precision_ = input.dtype() == DType::kFloat32 ? if_fp32_input_ : if_fp16_input_;
  if (precision_ == amp::Precision::kFloat16) {
    for (std::size_t i = 0; i < params_.size(); ++i) {
      const float* master = value(i);
      const std::size_t n = params_[i].numel;
      half_values_[i].resize(n);
      op_values_[i].resize(n);
      kernels::cast_fp32_to_fp16(master, half_values_[i].data(), n, kernels::Stream::host());
      kernels::cast_fp16_to_fp32(half_values_[i].data(), op_values_[i].data(), n,
                                 kernels::Stream::host());
    }
  }
  return precision_;
}

const float* Layer::op_value(std::size_t i) const {
  return precision_ == amp::Precision::kFloat16 ? op_values_[i].data() : value(i);
}

const float* Layer::input_view(const Tensor& input) {
  return op_view(input, precision_, input_scratch_, half_scratch_);
}

const float* Layer::grad_view(const Tensor& grad_output) {
  return op_view(grad_output, precision_, grad_scratch_, half_scratch_);
}

const float* Layer::cache_view(const Tensor& cached) {
  return op_view(cached, precision_, cache_scratch_, half_scratch_);
}

float* Layer::begin_result(Tensor& out, const Shape& shape) {
  if (precision_ == amp::Precision::kFloat32) {
    out.resize(shape, DType::kFloat32);
    return out.data();
  }
  result_shape_ = shape;
  result_scratch_.resize(shape.numel());
  return result_scratch_.data();
}

void Layer::end_result(Tensor& out) {
  if (precision_ == amp::Precision::kFloat16) {
    store(result_scratch_.data(), result_shape_, DType::kFloat16, out);
  }
}

void Layer::finish_gradient(std::size_t i) {
  if (precision_ == amp::Precision::kFloat16) {
    round_through_half(grad(i), params_[i].numel, half_scratch_);
  }
}

}  // namespace gw::trainer
