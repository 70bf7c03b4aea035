#include "reference_trainer/nn/im2col.h"

#include <algorithm>
#include <cstddef>

namespace gw::trainer {
namespace {

// Visits every (column row, input row) pair of the lowering; fn(row, oh, ih) gets ih < 0 or
// ih >= height for a padded row, which the callers treat as all zeros.
template <typename Fn>
void for_each_row(const ConvGeometry& g, Fn fn) {
  const std::ptrdiff_t pad = static_cast<std::ptrdiff_t>(g.padding);
  const std::size_t out_h = g.out_height();
  for (std::size_t c = 0; c < g.channels; ++c) {
    for (std::size_t ki = 0; ki < g.kernel; ++ki) {
      for (std::size_t kj = 0; kj < g.kernel; ++kj) {
        const std::size_t row = (c * g.kernel + ki) * g.kernel + kj;
        for (std::size_t oh = 0; oh < out_h; ++oh) {
          const std::ptrdiff_t ih = static_cast<std::ptrdiff_t>(oh * g.stride + ki) - pad;
          fn(c, kj, row, oh, ih);
        }
      }
    }
  }
}

}  // namespace

void im2col(const ConvGeometry& g, const float* image, float* cols) {
  const std::size_t out_w = g.out_width();
  const std::size_t n_cols = g.col_cols();
  const std::ptrdiff_t pad = static_cast<std::ptrdiff_t>(g.padding);
  const std::ptrdiff_t h = static_cast<std::ptrdiff_t>(g.height);
  const std::ptrdiff_t w = static_cast<std::ptrdiff_t>(g.width);
  for_each_row(
      g, [&](std::size_t c, std::size_t kj, std::size_t row, std::size_t oh, std::ptrdiff_t ih) {
        float* dst = cols + row * n_cols + oh * out_w;
        if (ih < 0 || ih >= h) {
          std::fill(dst, dst + out_w, 0.0f);
          return;
        }
        const float* src = image + (c * g.height + static_cast<std::size_t>(ih)) * g.width;
        for (std::size_t ow = 0; ow < out_w; ++ow) {
          const std::ptrdiff_t iw = static_cast<std::ptrdiff_t>(ow * g.stride + kj) - pad;
          dst[ow] = (iw >= 0 && iw < w) ? src[iw] : 0.0f;
        }
      });
}

void col2im(const ConvGeometry& g, const float* cols, float* image) {
  const std::size_t out_w = g.out_width();
  const std::size_t n_cols = g.col_cols();
  const std::ptrdiff_t pad = static_cast<std::ptrdiff_t>(g.padding);
  const std::ptrdiff_t h = static_cast<std::ptrdiff_t>(g.height);
  const std::ptrdiff_t w = static_cast<std::ptrdiff_t>(g.width);
  for_each_row(
      g, [&](std::size_t c, std::size_t kj, std::size_t row, std::size_t oh, std::ptrdiff_t ih) {
        if (ih < 0 || ih >= h) return;
        const float* src = cols + row * n_cols + oh * out_w;
        float* dst = image + (c * g.height + static_cast<std::size_t>(ih)) * g.width;
        for (std::size_t ow = 0; ow < out_w; ++ow) {
          const std::ptrdiff_t iw = static_cast<std::ptrdiff_t>(ow * g.stride + kj) - pad;
          if (iw >= 0 && iw < w) dst[iw] += src[ow];
        }
      });
}

}  // namespace gw::trainer
