// Lowering a 2-D convolution to a matrix product (im2col) and its adjoint (col2im).
#pragma once

#include <cstddef>

namespace gw::trainer {

// One image's convolution geometry: a square kernel, the same stride and zero padding on both axes.
struct ConvGeometry {
  std::size_t channels = 0;
  std::size_t height = 0;
  std::size_t width = 0;
  std::size_t kernel = 0;
  std::size_t stride = 1;
  std::size_t padding = 0;

  std::size_t out_height() const { return (height + 2 * padding - kernel) / stride + 1; }
  std::size_t out_width() const { return (width + 2 * padding - kernel) / stride + 1; }
  // The column matrix is [col_rows, col_cols]: row (c, ki, kj), column (oh, ow).
  std::size_t col_rows() const { return channels * kernel * kernel; }
  std::size_t col_cols() const { return out_height() * out_width(); }
};

// image [channels, height, width] -> cols [col_rows, col_cols]; padded taps read as zero.
void im2col(const ConvGeometry& g, const float* image, float* cols);

// The adjoint of im2col: ADDS each column entry into the image element it was read from (padded
// taps are dropped). The caller zeroes the image first.
void col2im(const ConvGeometry& g, const float* cols, float* image);

}  // namespace gw::trainer
