#include "reference_trainer/nn/tensor.h"

#include <stdexcept>
#include <string>


namespace gw::trainer {

const char* to_string(DType dtype) { return dtype == DType::kFloat16 ? "fp16" : "fp32"; }

void Tensor::resize(const Shape& shape, DType dtype) {
  shape_ = shape;
  numel_ = shape.numel();
  if (dtype != dtype_) {
    // The other storage keeps its capacity for the next switch back; its values are not carried.
    if (dtype == DType::kFloat32) {
      values_.assign(numel_, 0.0f);
    } else {
      halves_.assign(numel_, Half{0});
    }
    dtype_ = dtype;
    return;
  }
  if (dtype == DType::kFloat32) {
    values_.resize(numel_);
  } else {
    halves_.resize(numel_);
  }
}

void Tensor::throw_wrong_dtype(DType wanted) const {
  throw std::logic_error("Tensor " + shape_.to_string() + " holds " + to_string(dtype_) +
                         " values; " + to_string(wanted) + " access asked for");
}

}  // namespace gw::trainer
