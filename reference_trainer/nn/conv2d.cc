#include "reference_trainer/nn/conv2d.h"

#include <algorithm>
#include <stdexcept>

#include "kernels/elementwise.h"
#include "reference_trainer/nn/gemm.h"

namespace gw::trainer {

Conv2d::Conv2d(std::size_t in_channels, std::size_t out_channels, std::size_t kernel,
               std::size_t stride, std::size_t padding)
    : in_channels_(in_channels),
      out_channels_(out_channels),
      kernel_(kernel),
      stride_(stride),
      padding_(padding) {
  if (in_channels == 0 || out_channels == 0 || kernel == 0 || stride == 0) {
    throw std::invalid_argument("Conv2d: channels, kernel and stride must be positive");
  }
  const std::size_t fan_in = in_channels * kernel * kernel;
  add_parameter("weight", out_channels * fan_in, fan_in, ParameterInit::kKaimingUniform,
                out_channels);
  add_parameter("bias", out_channels, fan_in, ParameterInit::kZero);
}

std::string Conv2d::describe() const {
  return "Conv2d(" + std::to_string(in_channels_) + "->" + std::to_string(out_channels_) + ", k" +
         std::to_string(kernel_) + ", s" + std::to_string(stride_) + ", p" +
         std::to_string(padding_) + ")";
}

void Conv2d::forward(const Tensor& input, Tensor& output, bool training) {
  const Shape& s = input.shape();
  if (s.rank() != 4 || s[1] != in_channels_ || s[2] + 2 * padding_ < kernel_ ||
      s[3] + 2 * padding_ < kernel_) {
    throw std::invalid_argument(describe() + ": expects input [N, " + std::to_string(in_channels_) +
                                ", H, W] with H, W + 2 padding >= " + "kernel, got " +
                                s.to_string());
  }
  geometry_ = ConvGeometry{in_channels_, s[2], s[3], kernel_, stride_, padding_};
  batch_ = s[0];
  const std::size_t rows = geometry_.col_rows();
  const std::size_t cols = geometry_.col_cols();
  const std::size_t in_size = in_channels_ * s[2] * s[3];
  const std::size_t out_size = out_channels_ * cols;
  begin_forward(input);
  const float* x = input_view(input);
  float* out =
      begin_result(output, {batch_, out_channels_, geometry_.out_height(), geometry_.out_width()});
  // Training keeps every sample's column matrix for the weight gradient, in the op's dtype (an
  // fp16 op builds each in fp32 scratch, then stores it rounded, which is exact: its values are
  // the fp16 input's).
  const bool half_cache = training && op_dtype() == DType::kFloat16;
  cols_.resize({training ? batch_ : 1, rows, cols}, half_cache ? DType::kFloat16 : DType::kFloat32);
  if (half_cache) col_scratch_.resize(rows * cols);
  const float* w = op_value(0);
  const float* b = op_value(1);
  for (std::size_t n = 0; n < batch_; ++n) {
    float* col = half_cache ? col_scratch_.data() : cols_.data() + (training ? n * rows * cols : 0);
    im2col(geometry_, x + n * in_size, col);
    if (half_cache) {
      kernels::cast_fp32_to_fp16(col, cols_.half_data() + n * rows * cols, rows * cols,
                                 kernels::Stream::host());
    }
    float* y = out + n * out_size;
    for (std::size_t o = 0; o < out_channels_; ++o)
      std::fill(y + o * cols, y + (o + 1) * cols, b[o]);
    // y [out, P] = W [out, K] * cols [K, P] + bias
    gemm(false, false, out_channels_, cols, rows, 1.0f, w, rows, col, cols, 1.0f, y, cols);
  }
  end_result(output);
  has_input_ = training;
}

void Conv2d::backward(const Tensor& grad_output, Tensor* grad_input) {
  require_forward_cache(has_input_);
  const Shape expected{batch_, out_channels_, geometry_.out_height(), geometry_.out_width()};
  if (grad_output.shape() != expected) {
    throw std::invalid_argument(describe() + ": grad_output " + grad_output.shape().to_string() +
                                " does not match the output " + expected.to_string());
  }
  const std::size_t rows = geometry_.col_rows();
  const std::size_t cols = geometry_.col_cols();
  const std::size_t out_size = out_channels_ * cols;
  float* dw = grad(0);
  float* db = grad(1);
  std::fill(dw, dw + out_channels_ * rows, 0.0f);
  std::fill(db, db + out_channels_, 0.0f);
  const float* dy_all = grad_view(grad_output);
  const bool half_cache = cols_.dtype() == DType::kFloat16;
  for (std::size_t n = 0; n < batch_; ++n) {
    const float* dy = dy_all + n * out_size;
    const float* col;
    if (half_cache) {
      col_scratch_.resize(rows * cols);
      kernels::cast_fp16_to_fp32(cols_.half_data() + n * rows * cols, col_scratch_.data(),
                                 rows * cols, kernels::Stream::host());
      col = col_scratch_.data();
    } else {
      col = cols_.data() + n * rows * cols;
    }
    // dW [out, K] += dy [out, P] * cols^T [P, K]
    gemm(false, true, out_channels_, rows, cols, 1.0f, dy, cols, col, cols, 1.0f, dw, rows);
    for (std::size_t o = 0; o < out_channels_; ++o) {
      const float* plane = dy + o * cols;
      float sum = 0.0f;
      for (std::size_t p = 0; p < cols; ++p) sum += plane[p];
      db[o] += sum;
    }
  }
  finish_gradient(0);
  finish_gradient(1);
  if (grad_input == nullptr) return;
  const std::size_t in_size = in_channels_ * geometry_.height * geometry_.width;
  float* dx = begin_result(*grad_input, {batch_, in_channels_, geometry_.height, geometry_.width});
  std::fill(dx, dx + batch_ * in_size, 0.0f);
  grad_cols_.resize({rows, cols});
  for (std::size_t n = 0; n < batch_; ++n) {
    // dcols [K, P] = W^T [K, out] * dy [out, P]
    gemm(true, false, rows, cols, out_channels_, 1.0f, op_value(0), rows, dy_all + n * out_size,
         cols, 0.0f, grad_cols_.data(), cols);
    col2im(geometry_, grad_cols_.data(), dx + n * in_size);
  }
  end_result(*grad_input);
}

}  // namespace gw::trainer
