// A minimal dense fp32 tensor: a Shape and contiguous row-major values.
#pragma once

#include <cstddef>
#include <vector>

#include "reference_trainer/nn/shape.h"

namespace gw::trainer {

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(const Shape& shape) { resize(shape); }

  // Keeps the capacity: once a tensor has held its largest shape, resizing never allocates (the
  // training hot path relies on this). New elements are zero; kept ones keep their values.
  void resize(const Shape& shape);
  void fill(float value);

  const Shape& shape() const { return shape_; }
  std::size_t dim(std::size_t i) const { return shape_[i]; }
  std::size_t numel() const { return values_.size(); }

  float* data() { return values_.data(); }
  const float* data() const { return values_.data(); }
  float& operator[](std::size_t i) { return values_[i]; }
  float operator[](std::size_t i) const { return values_[i]; }

 private:
  Shape shape_;
  std::vector<float> values_;
};

}  // namespace gw::trainer
