#include "reference_trainer/nn/shape.h"

#include <stdexcept>

namespace gw::trainer {

Shape::Shape(std::initializer_list<std::size_t> dims) {
  if (dims.size() > kMaxRank) {
    throw std::invalid_argument("Shape: rank " + std::to_string(dims.size()) + " exceeds " +
                                std::to_string(kMaxRank));
  }
  for (std::size_t d : dims) dims_[rank_++] = d;
}

std::size_t Shape::operator[](std::size_t i) const {
  if (i >= rank_) {
    throw std::out_of_range("Shape" + to_string() + ": no dimension " + std::to_string(i));
  }
  return dims_[i];
}

std::size_t Shape::numel() const {
  if (rank_ == 0) return 0;
  std::size_t n = 1;
  for (std::size_t i = 0; i < rank_; ++i) n *= dims_[i];
  return n;
}

Shape Shape::with_batch(std::size_t n) const {
  if (rank_ == kMaxRank) {
    throw std::invalid_argument("Shape" + to_string() + ": no room for a batch dimension");
  }
  Shape out;
  out.dims_[0] = n;
  for (std::size_t i = 0; i < rank_; ++i) out.dims_[i + 1] = dims_[i];
  out.rank_ = rank_ + 1;
  return out;
}

Shape Shape::without_batch() const {
  if (rank_ == 0) throw std::invalid_argument("Shape[]: has no batch dimension");
  Shape out;
  for (std::size_t i = 1; i < rank_; ++i) out.dims_[i - 1] = dims_[i];
  out.rank_ = rank_ - 1;
  return out;
}

bool Shape::operator==(const Shape& other) const {
  if (rank_ != other.rank_) return false;
  for (std::size_t i = 0; i < rank_; ++i) {
    if (dims_[i] != other.dims_[i]) return false;
  }
  return true;
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (std::size_t i = 0; i < rank_; ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(dims_[i]);
  }
  return s + "]";
}

}  // namespace gw::trainer
