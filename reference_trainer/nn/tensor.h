// A minimal dense tensor: a Shape and contiguous row-major values, stored in fp32 or in IEEE
// binary16 (fp16, for the activations of the ops that mixed precision runs in fp16).
#pragma once

#include <cstddef>
#include <vector>

#include "kernels/half.h"
#include "reference_trainer/nn/shape.h"

namespace gw::trainer {

enum class DType { kFloat32, kFloat16 };

// "fp32", "fp16".
const char* to_string(DType dtype);

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(const Shape& shape, DType dtype = DType::kFloat32) { resize(shape, dtype); }

  // Keeps the capacity: once a tensor has held its largest shape in a dtype, resizing never
  // allocates (the training hot path relies on this). New elements are zero; kept ones keep their
  // values when the dtype stays the same.
  void resize(const Shape& shape, DType dtype = DType::kFloat32);

  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  std::size_t dim(std::size_t i) const { return shape_[i]; }
  std::size_t numel() const { return numel_; }

  // The fp32 values; std::logic_error on an fp16 tensor.
  float* data() {
    require(DType::kFloat32);
    return values_.data();
  }
  const float* data() const {
    require(DType::kFloat32);
    return values_.data();
  }
  // The binary16 values; std::logic_error on an fp32 tensor.
  Half* half_data() {
    require(DType::kFloat16);
    return halves_.data();
  }
  const Half* half_data() const {
    require(DType::kFloat16);
    return halves_.data();
  }
  float& operator[](std::size_t i) { return data()[i]; }
  float operator[](std::size_t i) const { return data()[i]; }

 private:
  void require(DType dtype) const {
    if (dtype_ != dtype) throw_wrong_dtype(dtype);
  }
  [[noreturn]] void throw_wrong_dtype(DType wanted) const;

  Shape shape_;
  DType dtype_ = DType::kFloat32;
  std::size_t numel_ = 0;
  std::vector<float> values_;
  std::vector<Half> halves_;
};

}  // namespace gw::trainer
