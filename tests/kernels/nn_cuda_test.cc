// kernels/nn.h on a CUDA stream, against the host stream (which kernels_cpu_test checks against
// hand-computed values, and kernels_thrust_omp_test checks the same Thrust algorithms against):
// what only a GPU can check is the stream plumbing and nvcc's arithmetic. Bit for bit, except a
// NaN's sign and payload and what exp and log touch (CUDA's may differ from glibc's in the last
// bit: kernels/nn.h). Built whenever nvcc is found; skips when no CUDA device is usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/device.h"
#include "kernels/nn.h"
#include "kernels/stream.h"
#include "tests/kernels/cuda_test_util.h"
#include "tests/kernels/kernels_test_util.h"
#include "tests/kernels/sparse_test_inputs.h"

namespace gw::kernels {
namespace {

using test_inputs::Dist;
using test_inputs::dist_name;
using test_inputs::kAllDists;
using test_inputs::make_values;
using test_inputs::random_labels;
using test_util::DeviceCopy;
using test_util::same_bits;
using test_util::same_bits_or_nan;

const Stream kHost = Stream::host();

const std::vector<std::size_t> kCounts = {0, 1, 7, 1000, 1'000'003};

// Within `bound[i]` (relative error allowed times a magnitude), NaN matching NaN: for what exp and
// log touch. CUDA's expf is within 2 ulp and glibc's within 1, and a row's sum and the division
// add a few more: 1e-6 is about 8 float ulps.
::testing::AssertionResult close_within(const std::vector<float>& expected,
                                        const std::vector<float>& actual,
                                        const std::vector<float>& magnitude) {
  if (expected.size() != actual.size()) return same_bits(expected, actual);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const float e = expected[i], a = actual[i];
    if (std::isnan(e) && std::isnan(a)) continue;
    if (e == a) continue;
    if (std::fabs(e - a) <= 1e-6f * magnitude[i] + 1e-30f) continue;
    return ::testing::AssertionFailure() << "[" << i << "] expected " << e << " got " << a
                                         << " (allowed " << 1e-6f * magnitude[i] << ")";
  }
  return ::testing::AssertionSuccess();
}

// Relative to the value itself: softmax probabilities.
::testing::AssertionResult close(const std::vector<float>& expected,
                                 const std::vector<float>& actual) {
  std::vector<float> magnitude(expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) magnitude[i] = std::fabs(expected[i]);
  return close_within(expected, actual, magnitude);
}

// A row's loss, log(sum exp(z - m)) - (z_y - m), relative to the terms it is the difference of:
// where they nearly cancel, each term's few ulps are many of the loss's.
::testing::AssertionResult close_loss(const std::vector<float>& expected,
                                      const std::vector<float>& actual, const std::vector<float>& z,
                                      const std::vector<std::uint8_t>& labels,
                                      std::size_t classes) {
  std::vector<float> magnitude(expected.size());
  for (std::size_t r = 0; r < expected.size(); ++r) {
    const float* row = z.data() + r * classes;
    const float m = *std::max_element(row, row + classes);
    const float zy = std::fabs(row[labels[r]] - m);
    magnitude[r] = std::fabs(expected[r]) + 2.0f * (std::isfinite(zy) ? zy : 0.0f);
  }
  return close_within(expected, actual, magnitude);
}

class CudaNnTest : public test_util::CudaStreamTest {};

TEST_F(CudaNnTest, ReluBiasAndGatherMatchCpuBitForBit) {
  for (std::size_t n : kCounts) {
    for (Dist dist : kAllDists) {
      SCOPED_TRACE(std::to_string(n) + ", " + dist_name(dist));
      const std::vector<float> x = make_values(dist, n, 1), dy = make_values(Dist::kNormal, n, 2);
      std::vector<float> y(n), dx(n);
      DeviceCopy<float> dx_(x, stream_), ddy(dy, stream_), dy_out(y, stream_), ddx(dx, stream_);
      relu_forward(x.data(), y.data(), n, kHost);
      relu_forward(dx_.get(), dy_out.get(), n, stream_);
      EXPECT_TRUE(same_bits(y, dy_out.to_host()));
      relu_backward(x.data(), dy.data(), dx.data(), n, kHost);
      relu_backward(dx_.get(), ddy.get(), ddx.get(), n, stream_);
      EXPECT_TRUE(same_bits(dx, ddx.to_host()));
      // x as [n / 10, 10] rows; bias from dy.
      const std::size_t rows = n / 10, cols = 10;
      std::vector<float> db(cols), bcast(rows * cols);
      DeviceCopy<float> ddb(db, stream_), dbcast(bcast, stream_);
      bias_grad(x.data(), rows, cols, db.data(), kHost);
      bias_grad(dx_.get(), rows, cols, ddb.get(), stream_);
      EXPECT_TRUE(same_bits_or_nan(db, ddb.to_host()));
      broadcast_rows(dy.data(), rows, cols, bcast.data(), kHost);
      broadcast_rows(ddy.get(), rows, cols, dbcast.get(), stream_);
      EXPECT_TRUE(same_bits(bcast, dbcast.to_host()));
      // Rows 0..9 of x as [10, n / 10] gathered by repeated indices.
      const std::vector<std::uint64_t> idx = {9, 0, 3, 3, 9};
      const std::size_t width = n / 10;
      std::vector<float> g(idx.size() * width);
      std::vector<std::uint8_t> labels = random_labels(10, 256, 3), l(idx.size());
      DeviceCopy<std::uint64_t> didx(idx, stream_);
      DeviceCopy<float> dg(g, stream_);
      DeviceCopy<std::uint8_t> dlabels(labels, stream_), dl(l, stream_);
      gather_rows(x.data(), width, idx.data(), idx.size(), g.data(), kHost);
      gather_rows(dx_.get(), width, didx.get(), idx.size(), dg.get(), stream_);
      EXPECT_TRUE(same_bits(g, dg.to_host()));
      gather_bytes(labels.data(), idx.data(), idx.size(), l.data(), kHost);
      gather_bytes(dlabels.get(), didx.get(), idx.size(), dl.get(), stream_);
      EXPECT_EQ(l, dl.to_host());
    }
  }
}

TEST_F(CudaNnTest, SoftmaxCrossEntropyAndArgmaxMatchCpu) {
  for (std::size_t rows : {1, 7, 256, 10'000}) {
    for (std::size_t classes : {1, 10, 256}) {
      for (Dist dist : {Dist::kNormal, Dist::kTies, Dist::kWideRange}) {
        SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(classes) + ", " +
                     dist_name(dist));
        const std::size_t n = rows * classes;
        const std::vector<float> z = make_values(dist, n, 4);
        std::vector<std::uint8_t> labels = random_labels(rows, classes, 5);
        std::vector<float> p(n), loss(rows), g(n);
        DeviceCopy<float> dz(z, stream_), dp(p, stream_), dloss(loss, stream_), dg(g, stream_);
        DeviceCopy<std::uint8_t> dlabels(labels, stream_);
        softmax_cross_entropy_forward(z.data(), labels.data(), rows, classes, p.data(), loss.data(),
                                      kHost);
        softmax_cross_entropy_forward(dz.get(), dlabels.get(), rows, classes, dp.get(), dloss.get(),
                                      stream_);
        const std::vector<float> p_device = dp.to_host();
        EXPECT_TRUE(close(p, p_device));
        EXPECT_TRUE(close_loss(loss, dloss.to_host(), z, labels, classes));
        // Backward from the same probabilities: exact.
        DeviceCopy<float> dp_host(p, stream_);
        const float scale = 1.0f / static_cast<float>(rows);
        softmax_cross_entropy_backward(p.data(), labels.data(), rows, classes, scale, g.data(),
                                       kHost);
        softmax_cross_entropy_backward(dp_host.get(), dlabels.get(), rows, classes, scale, dg.get(),
                                       stream_);
        EXPECT_TRUE(same_bits(g, dg.to_host()));
        // Every row's argmax (std::max_element's rule) as its label: the device counts every row
        // correct only if each row's argmax is the host's.
        std::vector<std::uint8_t> idx(rows);
        for (std::size_t r = 0; r < rows; ++r) {
          const float* row = z.data() + r * classes;
          idx[r] = static_cast<std::uint8_t>(std::max_element(row, row + classes) - row);
        }
        DeviceCopy<std::uint8_t> didx(idx, stream_);
        EXPECT_EQ(count_correct(dz.get(), didx.get(), rows, classes, stream_), rows);
        EXPECT_EQ(count_correct(z.data(), labels.data(), rows, classes, kHost),
                  count_correct(dz.get(), dlabels.get(), rows, classes, stream_));
        EXPECT_EQ(first_bad_label(dlabels.get(), rows, classes, stream_), rows);
        if (classes < 256) {
          labels[rows / 2] = static_cast<std::uint8_t>(classes);
          DeviceCopy<std::uint8_t> dbad(labels, stream_);
          EXPECT_EQ(first_bad_label(dbad.get(), rows, classes, stream_), rows / 2);
        }
      }
    }
  }
}

TEST_F(CudaNnTest, MaxPoolMatchesCpuBitForBit) {
  struct Pool {
    std::size_t planes, h, w, kernel;
  };
  for (const Pool& q : std::vector<Pool>{{1, 1, 1, 1}, {3, 5, 7, 2}, {2048, 28, 28, 2}}) {
    for (Dist dist : kAllDists) {
      SCOPED_TRACE(std::to_string(q.planes) + " planes, " + dist_name(dist));
      const std::size_t in_n = q.planes * q.h * q.w;
      const std::size_t out_n = q.planes * (q.h / q.kernel) * (q.w / q.kernel);
      const std::vector<float> x = make_values(dist, in_n, 6), dy = make_values(dist, out_n, 7);
      std::vector<float> y(out_n), dx(in_n);
      std::vector<std::uint32_t> arg(out_n);
      DeviceCopy<float> dx_in(x, stream_), dy_out(y, stream_), ddy(dy, stream_), ddx(dx, stream_);
      DeviceCopy<std::uint32_t> darg(arg, stream_);
      max_pool2d_forward(x.data(), q.planes, q.h, q.w, q.kernel, y.data(), arg.data(), kHost);
      max_pool2d_forward(dx_in.get(), q.planes, q.h, q.w, q.kernel, dy_out.get(), darg.get(),
                         stream_);
      EXPECT_TRUE(same_bits(y, dy_out.to_host()));
      EXPECT_EQ(arg, darg.to_host());
      max_pool2d_backward(dy.data(), arg.data(), q.planes, q.h, q.w, q.kernel, dx.data(), kHost);
      max_pool2d_backward(ddy.get(), darg.get(), q.planes, q.h, q.w, q.kernel, ddx.get(), stream_);
      EXPECT_TRUE(same_bits_or_nan(dx, ddx.to_host()));
    }
  }
}

TEST_F(CudaNnTest, OptimizersMatchCpuBitForBit) {
  for (std::size_t n : kCounts) {
    for (Dist dist : kAllDists) {
      SCOPED_TRACE(std::to_string(n) + ", " + dist_name(dist));
      const std::vector<float> g = make_values(dist, n, 8);
      for (int mode = 0; mode < 3; ++mode) {
        const SgdCoefficients c{0.05f, 5e-4f, 0.9f, 0.25f, mode == 2};
        std::vector<float> w = make_values(Dist::kNormal, n, 9), buf = make_values(dist, n, 10);
        DeviceCopy<float> dw(w, stream_), dg(g, stream_), dbuf(buf, stream_);
        sgd_update(w.data(), g.data(), mode == 0 ? nullptr : buf.data(), n, c, kHost);
        sgd_update(dw.get(), dg.get(), mode == 0 ? nullptr : dbuf.get(), n, c, stream_);
        EXPECT_TRUE(same_bits_or_nan(w, dw.to_host())) << "mode " << mode;
        EXPECT_TRUE(same_bits_or_nan(buf, dbuf.to_host())) << "mode " << mode;
      }
      const AdamCoefficients c{0.9f, 0.1f, 0.999f, 0.001f, 1e-2f, 1e-3f / 0.1f, 0.03f, 1e-8f, 0.5f};
      std::vector<float> w = make_values(Dist::kNormal, n, 11), m(n, 0.01f), v(n, 0.02f);
      DeviceCopy<float> dw(w, stream_), dg(g, stream_), dm(m, stream_), dv(v, stream_);
      adam_update(w.data(), g.data(), m.data(), v.data(), n, c, kHost);
      adam_update(dw.get(), dg.get(), dm.get(), dv.get(), n, c, stream_);
      EXPECT_TRUE(same_bits_or_nan(w, dw.to_host()));
      EXPECT_TRUE(same_bits_or_nan(m, dm.to_host()));
      EXPECT_TRUE(same_bits_or_nan(v, dv.to_host()));
    }
  }
}

}  // namespace
}  // namespace gw::kernels
