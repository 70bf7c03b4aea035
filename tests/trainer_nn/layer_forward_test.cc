// Layer forward passes against naive reference loops, and the layers' error handling.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "reference_trainer/nn/conv2d.h"
#include "reference_trainer/nn/linear.h"
#include "reference_trainer/nn/max_pool2d.h"
#include "reference_trainer/nn/relu.h"
#include "reference_trainer/nn/softmax_cross_entropy.h"
#include "test_util.h"

namespace gw::trainer {
namespace {

TEST(ShapeTest, BasicsAndBatchDimension) {
  const Shape s{2, 3, 4};
  EXPECT_EQ(s.rank(), 3u);
  EXPECT_EQ(s.numel(), 24u);
  EXPECT_EQ(s.with_batch(5), (Shape{5, 2, 3, 4}));
  EXPECT_EQ(s.without_batch(), (Shape{3, 4}));
  EXPECT_EQ(s.to_string(), "[2, 3, 4]");
  EXPECT_EQ(Shape{}.numel(), 0u);
  EXPECT_THROW(s[3], std::out_of_range);
  EXPECT_THROW((Shape{1, 2, 3, 4, 5}), std::invalid_argument);
  EXPECT_THROW((Shape{1, 2, 3, 4}.with_batch(1)), std::invalid_argument);
}

TEST(LayerForwardTest, LinearMatchesNaiveLoop) {
  std::mt19937_64 rng(11);
  const std::size_t n = 3, in = 7, out = 5;
  Linear layer(in, out);
  testing::OwnedParameters p(layer, rng);
  const Tensor x = testing::random_tensor({n, in}, rng);
  Tensor y;
  layer.forward(x, y, false);
  ASSERT_EQ(y.shape(), (Shape{n, out}));
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t o = 0; o < out; ++o) {
      double expected = p.values[1][o];
      for (std::size_t i = 0; i < in; ++i)
        expected += double{x[r * in + i]} * p.values[0][o * in + i];
      EXPECT_NEAR(y[r * out + o], expected, 1e-5) << "row " << r << " output " << o;
    }
  }
}

// Direct cross-correlation with zero padding, in double.
std::vector<double> naive_conv(const Tensor& x, const std::vector<float>& w,
                               const std::vector<float>& b, std::size_t out_ch, std::size_t k,
                               std::size_t stride, std::size_t pad, std::size_t* oh_out,
                               std::size_t* ow_out) {
  const std::size_t n = x.dim(0), c = x.dim(1), h = x.dim(2), wd = x.dim(3);
  const std::size_t oh = (h + 2 * pad - k) / stride + 1, ow = (wd + 2 * pad - k) / stride + 1;
  *oh_out = oh;
  *ow_out = ow;
  std::vector<double> y(n * out_ch * oh * ow);
  for (std::size_t s = 0; s < n; ++s)
    for (std::size_t o = 0; o < out_ch; ++o)
      for (std::size_t i = 0; i < oh; ++i)
        for (std::size_t j = 0; j < ow; ++j) {
          double acc = b[o];
          for (std::size_t ci = 0; ci < c; ++ci)
            for (std::size_t ki = 0; ki < k; ++ki)
              for (std::size_t kj = 0; kj < k; ++kj) {
                const long ih = static_cast<long>(i * stride + ki) - static_cast<long>(pad);
                const long iw = static_cast<long>(j * stride + kj) - static_cast<long>(pad);
                if (ih < 0 || iw < 0 || ih >= static_cast<long>(h) || iw >= static_cast<long>(wd))
                  continue;
                acc += double{x[((s * c + ci) * h + ih) * wd + iw]} *
                       w[((o * c + ci) * k + ki) * k + kj];
              }
          y[((s * out_ch + o) * oh + i) * ow + j] = acc;
        }
  return y;
}

struct ConvCase {
  std::size_t in_ch, out_ch, k, stride, pad, h, w;
};

class ConvForwardTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvForwardTest, MatchesDirectConvolution) {
  const ConvCase c = GetParam();
  std::mt19937_64 rng(12);
  Conv2d layer(c.in_ch, c.out_ch, c.k, c.stride, c.pad);
  testing::OwnedParameters p(layer, rng);
  const Tensor x = testing::random_tensor({2, c.in_ch, c.h, c.w}, rng);
  for (bool training : {false, true}) {
    Tensor y;
    layer.forward(x, y, training);
    std::size_t oh = 0, ow = 0;
    const auto expected =
        naive_conv(x, p.values[0], p.values[1], c.out_ch, c.k, c.stride, c.pad, &oh, &ow);
    ASSERT_EQ(y.shape(), (Shape{2, c.out_ch, oh, ow}));
    for (std::size_t i = 0; i < expected.size(); ++i) {
      ASSERT_NEAR(y[i], expected[i], 1e-4) << "element " << i << " training " << training;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, ConvForwardTest,
                         ::testing::Values(ConvCase{2, 3, 3, 1, 1, 6, 6},
                                           ConvCase{2, 3, 3, 2, 1, 7, 6},
                                           ConvCase{1, 4, 5, 1, 2, 9, 9},
                                           ConvCase{3, 2, 2, 2, 0, 5, 5},
                                           ConvCase{1, 1, 1, 1, 0, 3, 4}));

TEST(LayerForwardTest, MaxPoolPicksTheFirstMaximumAndRoutesItsGradient) {
  MaxPool2d pool(2);
  Tensor x({1, 1, 2, 4});
  const float v[] = {1, 3, 5, 5,  //
                     3, 2, 0, 5};
  std::copy(v, v + 8, x.data());
  Tensor y;
  pool.forward(x, y, true);
  ASSERT_EQ(y.shape(), (Shape{1, 1, 1, 2}));
  EXPECT_EQ(y[0], 3.0f);
  EXPECT_EQ(y[1], 5.0f);
  Tensor dy({1, 1, 1, 2});
  dy[0] = 10.0f;
  dy[1] = 20.0f;
  Tensor dx;
  pool.backward(dy, &dx);
  const float expected[] = {0, 10, 20, 0,  //
                            0, 0,  0,  0};
  for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(dx[i], expected[i]) << i;
}

TEST(LayerForwardTest, SoftmaxCrossEntropyIsStableForLargeLogits) {
  Tensor logits({2, 3});
  const float v[] = {1000.0f, 0.0f, -1000.0f, -500.0f, -500.0f, -500.0f};
  std::copy(v, v + 6, logits.data());
  const std::uint8_t labels[] = {0, 2};
  SoftmaxCrossEntropy loss;
  const float mean = loss.forward(logits, labels);
  // Sample 0: loss ~ 0 (exp(-1000) underflows); sample 1: log 3.
  EXPECT_TRUE(std::isfinite(mean));
  EXPECT_NEAR(loss.loss_sum(), std::log(3.0), 1e-6);
  EXPECT_NEAR(mean, std::log(3.0) / 2, 1e-6);
  std::uint8_t pred[2];
  SoftmaxCrossEntropy::predict(logits, pred);
  EXPECT_EQ(pred[0], 0);
  EXPECT_EQ(pred[1], 0);  // ties: the first
  EXPECT_EQ(SoftmaxCrossEntropy::count_correct(logits, labels), 1);
}

TEST(LayerForwardTest, SoftmaxCrossEntropyKnownValue) {
  Tensor logits({1, 2});
  logits[0] = 0.0f;
  logits[1] = std::log(3.0f);  // softmax = [1/4, 3/4]
  const std::uint8_t label = 0;
  SoftmaxCrossEntropy loss;
  EXPECT_NEAR(loss.forward(logits, &label), std::log(4.0), 1e-6);
  Tensor g;
  loss.backward(g);
  EXPECT_NEAR(g[0], 0.25 - 1.0, 1e-6);
  EXPECT_NEAR(g[1], 0.75, 1e-6);
}

TEST(LayerForwardTest, RejectsBadInputs) {
  std::mt19937_64 rng(13);
  Linear linear(4, 2);
  Tensor y;
  EXPECT_THROW(linear.forward(Tensor({3, 4}), y, true), std::logic_error);  // nothing bound
  testing::OwnedParameters p(linear, rng);
  EXPECT_THROW(linear.forward(Tensor({3, 5}), y, true), std::invalid_argument);
  EXPECT_THROW(linear.backward(Tensor({3, 2}), nullptr), std::logic_error);  // no forward yet
  linear.forward(Tensor({3, 4}), y, true);
  EXPECT_THROW(linear.backward(Tensor({2, 2}), nullptr), std::invalid_argument);
  linear.forward(Tensor({3, 4}), y, false);  // evaluation drops the cache
  EXPECT_THROW(linear.backward(Tensor({3, 2}), nullptr), std::logic_error);

  Conv2d conv(2, 1, 3, 1, 0);
  testing::OwnedParameters pc(conv, rng);
  EXPECT_THROW(conv.forward(Tensor({1, 3, 5, 5}), y, true), std::invalid_argument);
  EXPECT_THROW(conv.forward(Tensor({1, 2, 2, 5}), y, true), std::invalid_argument);
  EXPECT_THROW(Conv2d(1, 1, 3, 0, 0), std::invalid_argument);

  MaxPool2d pool(2);
  EXPECT_THROW(pool.forward(Tensor({1, 1, 1, 4}), y, true), std::invalid_argument);

  SoftmaxCrossEntropy loss;
  const std::uint8_t bad_label = 3;
  EXPECT_THROW(loss.forward(Tensor({1, 3}), &bad_label), std::invalid_argument);
  EXPECT_THROW(loss.backward(y), std::logic_error);
}

}  // namespace
}  // namespace gw::trainer
