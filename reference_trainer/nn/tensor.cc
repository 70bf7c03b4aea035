#include "reference_trainer/nn/tensor.h"

#include <algorithm>

namespace gw::trainer {

void Tensor::resize(const Shape& shape) {
  shape_ = shape;
  values_.resize(shape.numel());
}

void Tensor::fill(float value) { std::fill(values_.begin(), values_.end(), value); }

}  // namespace gw::trainer
