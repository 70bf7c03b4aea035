// The dimensions of a Tensor: batch-major, at most NCHW.
#pragma once

#include <array>
#include <cstddef>
#include <initializer_list>
#include <string>

namespace gw::trainer {

// Fixed capacity, so building a Shape on the hot path never allocates.
class Shape {
 public:
  static constexpr std::size_t kMaxRank = 4;

  Shape() = default;
  Shape(std::initializer_list<std::size_t> dims);  // NOLINT: implicit, so resize({n, c}) reads well

  std::size_t rank() const { return rank_; }
  // Throws std::out_of_range for i >= rank().
  std::size_t operator[](std::size_t i) const;
  // Product of the dimensions; 0 for the empty (rank 0) shape.
  std::size_t numel() const;

  // This shape with a leading batch dimension n.
  Shape with_batch(std::size_t n) const;
  // Dimensions 1..rank-1, i.e. one sample's shape.
  Shape without_batch() const;

  bool operator==(const Shape& other) const;
  bool operator!=(const Shape& other) const { return !(*this == other); }
  std::string to_string() const;  // "[3, 2, 6, 6]"

 private:
  std::array<std::size_t, kMaxRank> dims_{};
  std::size_t rank_ = 0;
};

}  // namespace gw::trainer
