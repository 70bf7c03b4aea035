// The device algorithms of kernels/nn.h (kernels/thrust/nn_thrust.h) under Thrust's OpenMP
// system, against the CPU loops (kernels/cpu/nn_cpu.cc) that the reference trainer's layers run:
// bit for bit, on sizes from 0 up and on distributions that exercise each rule (ties for the
// argmax and pooling, -0 and NaN for ReLU, large logits for the softmax). Built into
// kernels_thrust_omp_test beside thrust_omp_test.cc (Note [One algorithm source]).
#include <gtest/gtest.h>
#include <thrust/system/omp/execution_policy.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/nn_cpu.h"
#include "kernels/thrust/nn_thrust.h"
#include "tests/kernels/kernels_test_util.h"
#include "tests/kernels/sparse_test_inputs.h"

namespace gw::kernels {
namespace {

using test_inputs::Dist;
using test_inputs::dist_name;
using test_inputs::kAllDists;
using test_inputs::make_values;
using test_inputs::random_labels;
using test_util::same_bits;
using test_util::same_bits_or_nan;

const auto& omp = thrust::omp::par;

// Element counts: 0, 1, odd, around a vector width, and large enough for both OpenMP threads.
const std::vector<std::size_t> kCounts = {0, 1, 7, 16, 63, 1000, 100'003};

// [rows, cols] shapes: empty, single, odd, the trainer's (a batch by 10 classes), the widest
// softmax (256 classes).
struct RowShape {
  std::size_t rows, cols;
};
const std::vector<RowShape> kRowShapes = {{0, 10},  {1, 1},    {1, 10},    {7, 3},
                                          {64, 10}, {33, 256}, {1000, 10}, {5, 1000}};

std::string shape_name(RowShape s, Dist d) {
  return std::to_string(s.rows) + " x " + std::to_string(s.cols) + ", " + dist_name(d);
}

// make_values times `scale`: logits far apart, where exp underflows to 0 for all but the maximum.
std::vector<float> scaled_values(Dist d, std::size_t n, std::uint32_t seed, float scale) {
  std::vector<float> v = make_values(d, n, seed);
  for (float& x : v) x *= scale;
  return v;
}

TEST(NnThrustOmp, ReluMatchesCpuBitForBit) {
  for (std::size_t n : kCounts) {
    for (Dist dist : kAllDists) {
      SCOPED_TRACE(std::to_string(n) + ", " + dist_name(dist));
      const std::vector<float> x = make_values(dist, n, 1), dy = make_values(Dist::kNormal, n, 2);
      std::vector<float> y(n), y2(n), dx(n), dx2(n);
      cpu::relu_forward(x.data(), y.data(), n);
      thrust_algo::relu_forward(omp, x.data(), y2.data(), n);
      ASSERT_TRUE(same_bits(y, y2));
      cpu::relu_backward(x.data(), dy.data(), dx.data(), n);
      thrust_algo::relu_backward(omp, x.data(), dy.data(), dx2.data(), n);
      ASSERT_TRUE(same_bits(dx, dx2));
    }
  }
}

TEST(NnThrustOmp, BiasMatchesCpuBitForBit) {
  for (RowShape s : kRowShapes) {
    for (Dist dist : kAllDists) {
      SCOPED_TRACE(shape_name(s, dist));
      const std::size_t n = s.rows * s.cols;
      const std::vector<float> bias = make_values(dist, s.cols, 3);
      const std::vector<float> dy = make_values(dist, n, 4);
      std::vector<float> y(n, 1.5f), y2(n, -1.5f);
      cpu::broadcast_rows(bias.data(), s.rows, s.cols, y.data());
      thrust_algo::broadcast_rows(omp, bias.data(), s.rows, s.cols, y2.data());
      ASSERT_TRUE(same_bits(y, y2));
      std::vector<float> db(s.cols, 7.0f), db2(s.cols, -7.0f);
      cpu::bias_grad(dy.data(), s.rows, s.cols, db.data());
      thrust_algo::bias_grad(omp, dy.data(), s.rows, s.cols, db2.data());
      ASSERT_TRUE(same_bits_or_nan(db, db2));
    }
  }
}

TEST(NnThrustOmp, SoftmaxCrossEntropyMatchesCpuBitForBit) {
  for (RowShape s : kRowShapes) {
    for (Dist dist : kAllDists) {
      for (float scale : {1.0f, 100.0f, 1e4f}) {
        SCOPED_TRACE(shape_name(s, dist) + ", logits times " + std::to_string(scale));
        const std::size_t n = s.rows * s.cols;
        const std::vector<float> z = scaled_values(dist, n, 6, scale);
        const std::vector<std::uint8_t> labels = random_labels(s.rows, s.cols, 7);
        std::vector<float> p(n), p2(n), loss(s.rows), loss2(s.rows);
        cpu::softmax_cross_entropy_forward(z.data(), labels.data(), s.rows, s.cols, p.data(),
                                           loss.data());
        thrust_algo::softmax_cross_entropy_forward(omp, z.data(), labels.data(), s.rows, s.cols,
                                                   p2.data(), loss2.data());
        ASSERT_TRUE(same_bits_or_nan(p, p2));
        ASSERT_TRUE(same_bits_or_nan(loss, loss2));
        const float grad_scale = 1.0f / static_cast<float>(s.rows == 0 ? 1 : s.rows);
        std::vector<float> g(n), g2(n);
        cpu::softmax_cross_entropy_backward(p.data(), labels.data(), s.rows, s.cols, grad_scale,
                                            g.data());
        thrust_algo::softmax_cross_entropy_backward(omp, p.data(), labels.data(), s.rows, s.cols,
                                                    grad_scale, g2.data());
        ASSERT_TRUE(same_bits_or_nan(g, g2));
        // In place, as the layer may call it.
        thrust_algo::softmax_cross_entropy_backward(omp, p2.data(), labels.data(), s.rows, s.cols,
                                                    grad_scale, p2.data());
        ASSERT_TRUE(same_bits_or_nan(g, p2));
      }
    }
  }
}

TEST(NnThrustOmp, ArgmaxAndCountCorrectMatchCpuAlsoOnTies) {
  for (RowShape s : kRowShapes) {
    for (Dist dist : kAllDists) {
      SCOPED_TRACE(shape_name(s, dist));
      const std::vector<float> z = make_values(dist, s.rows * s.cols, 8);
      // Every row's argmax by std::max_element (the CPU layer's rule) as its label, where it fits
      // a label (below 256; other rows get 0, which is then wrong): both count exactly those rows
      // correct only if each row's argmax is the same.
      std::vector<std::uint8_t> idx(s.rows);
      std::size_t fits = 0;
      for (std::size_t r = 0; r < s.rows; ++r) {
        const float* row = z.data() + r * s.cols;
        const auto best = static_cast<std::size_t>(std::max_element(row, row + s.cols) - row);
        idx[r] = static_cast<std::uint8_t>(best < 256 ? best : 0);
        fits += best < 256 ? 1 : 0;
      }
      ASSERT_EQ(cpu::count_correct(z.data(), idx.data(), s.rows, s.cols), fits);
      ASSERT_EQ(thrust_algo::count_correct(omp, z.data(), idx.data(), s.rows, s.cols), fits);
      // Labels that are right about half the time, so the count is neither 0 nor rows.
      std::vector<std::uint8_t> labels = random_labels(s.rows, s.cols, 9);
      for (std::size_t r = 0; r < s.rows; r += 2) labels[r] = idx[r];
      EXPECT_EQ(cpu::count_correct(z.data(), labels.data(), s.rows, s.cols),
                thrust_algo::count_correct(omp, z.data(), labels.data(), s.rows, s.cols));
    }
  }
}

TEST(NnThrustOmp, FirstBadLabelMatchesCpu) {
  for (std::size_t n : kCounts) {
    for (std::size_t classes : {1, 10, 255, 256}) {
      std::vector<std::uint8_t> labels = random_labels(n, classes, 10);
      EXPECT_EQ(thrust_algo::first_bad_label(omp, labels.data(), n, classes), n);
      for (std::size_t at : {n / 2, n - 1, n / 3}) {
        if (n == 0 || classes == 256) continue;
        labels[at] = static_cast<std::uint8_t>(classes);
        EXPECT_EQ(cpu::first_bad_label(labels.data(), n, classes),
                  thrust_algo::first_bad_label(omp, labels.data(), n, classes))
            << "n " << n << ", classes " << classes << ", bad at " << at;
      }
    }
  }
}

TEST(NnThrustOmp, MaxPoolMatchesCpuBitForBitAlsoOnTies) {
  struct Pool {
    std::size_t planes, h, w, kernel;
  };
  // Ragged edges (5 x 7 by 2), the CNN's two pools, a 3 x 3 window, a window the whole plane.
  const std::vector<Pool> pools = {{0, 4, 4, 2},    {1, 1, 1, 1},  {3, 5, 7, 2}, {64, 28, 28, 2},
                                   {96, 14, 14, 2}, {4, 9, 10, 3}, {2, 6, 6, 6}};
  for (const Pool& q : pools) {
    for (Dist dist : kAllDists) {
      SCOPED_TRACE(std::to_string(q.planes) + " x " + std::to_string(q.h) + " x " +
                   std::to_string(q.w) + " by " + std::to_string(q.kernel) + ", " +
                   dist_name(dist));
      const std::size_t in_n = q.planes * q.h * q.w;
      const std::size_t out_n = q.planes * (q.h / q.kernel) * (q.w / q.kernel);
      const std::vector<float> x = make_values(dist, in_n, 11);
      std::vector<float> y(out_n), y2(out_n), y3(out_n);
      std::vector<std::uint32_t> arg(out_n), arg2(out_n);
      cpu::max_pool2d_forward(x.data(), q.planes, q.h, q.w, q.kernel, y.data(), arg.data());
      thrust_algo::max_pool2d_forward(omp, x.data(), q.planes, q.h, q.w, q.kernel, y2.data(),
                                      arg2.data());
      ASSERT_TRUE(same_bits(y, y2));
      ASSERT_EQ(arg, arg2);
      thrust_algo::max_pool2d_forward(omp, x.data(), q.planes, q.h, q.w, q.kernel, y3.data(),
                                      nullptr);
      ASSERT_TRUE(same_bits(y, y3));
      // dy with -0s and NaNs: the CPU's 0 + dy turns -0 into +0, and the gather must too.
      const std::vector<float> dy = make_values(dist, out_n, 12);
      std::vector<float> dx(in_n, 3.0f), dx2(in_n, -3.0f);
      cpu::max_pool2d_backward(dy.data(), arg.data(), q.planes, q.h, q.w, q.kernel, dx.data());
      thrust_algo::max_pool2d_backward(omp, dy.data(), arg.data(), q.planes, q.h, q.w, q.kernel,
                                       dx2.data());
      ASSERT_TRUE(same_bits_or_nan(dx, dx2));
    }
  }
}

TEST(NnThrustOmp, SgdMatchesCpuBitForBit) {
  for (std::size_t n : kCounts) {
    for (Dist dist : kAllDists) {
      for (int mode = 0; mode < 3; ++mode) {  // plain, momentum, nesterov
        for (float wd : {0.0f, 5e-4f}) {
          SCOPED_TRACE(std::to_string(n) + ", " + dist_name(dist) + ", mode " +
                       std::to_string(mode) + ", wd " + std::to_string(wd));
          const SgdCoefficients c{0.05f, wd, mode == 0 ? 0.0f : 0.9f, 0.25f, mode == 2};
          std::vector<float> w = make_values(Dist::kNormal, n, 13), w2 = w;
          std::vector<float> buf = make_values(Dist::kUniform, n, 14), buf2 = buf;
          // Three steps, so the momentum buffer carries what the step before left in it.
          for (std::uint32_t step = 0; step < 3; ++step) {
            const std::vector<float> g = make_values(dist, n, 15 + step);
            cpu::sgd_update(w.data(), g.data(), mode == 0 ? nullptr : buf.data(), n, c);
            thrust_algo::sgd_update(omp, w2.data(), g.data(), mode == 0 ? nullptr : buf2.data(), n,
                                    c);
          }
          ASSERT_TRUE(same_bits_or_nan(w, w2));
          ASSERT_TRUE(same_bits_or_nan(buf, buf2));
        }
      }
    }
  }
}

TEST(NnThrustOmp, AdamMatchesCpuBitForBit) {
  for (std::size_t n : kCounts) {
    for (Dist dist : kAllDists) {
      for (float wd : {0.0f, 1e-2f}) {
        SCOPED_TRACE(std::to_string(n) + ", " + dist_name(dist) + ", wd " + std::to_string(wd));
        std::vector<float> w = make_values(Dist::kNormal, n, 20), w2 = w;
        std::vector<float> m(n, 0.0f), m2 = m, v(n, 0.0f), v2 = v;
        for (int t = 1; t <= 3; ++t) {
          // adam.cc's scalars for step t.
          const double bias1 = 1.0 - std::pow(0.9, t), bias2 = 1.0 - std::pow(0.999, t);
          const AdamCoefficients c{0.9f,
                                   static_cast<float>(1.0 - 0.9),
                                   0.999f,
                                   static_cast<float>(1.0 - 0.999),
                                   wd,
                                   static_cast<float>(1e-3 / bias1),
                                   static_cast<float>(std::sqrt(bias2)),
                                   1e-8f,
                                   0.5f};
          const std::vector<float> g = make_values(dist, n, 21 + static_cast<std::uint32_t>(t));
          cpu::adam_update(w.data(), g.data(), m.data(), v.data(), n, c);
          thrust_algo::adam_update(omp, w2.data(), g.data(), m2.data(), v2.data(), n, c);
        }
        ASSERT_TRUE(same_bits_or_nan(w, w2));
        ASSERT_TRUE(same_bits_or_nan(m, m2));
        ASSERT_TRUE(same_bits_or_nan(v, v2));
      }
    }
  }
}

TEST(NnThrustOmp, GatherMatchesCpu) {
  const std::size_t rows_total = 101;
  for (std::size_t width : {0, 1, 7, 784}) {
    for (std::size_t count : {0, 1, 63, 256, 1000}) {
      SCOPED_TRACE("width " + std::to_string(width) + ", count " + std::to_string(count));
      const std::vector<float> src = make_values(Dist::kSpecials, rows_total * width, 30);
      std::vector<std::uint8_t> labels = random_labels(rows_total, 256, 31);
      // Indices with repeats, the last row included.
      std::mt19937 rng(32);
      std::uniform_int_distribution<std::uint64_t> row(0, rows_total - 1);
      std::vector<std::uint64_t> idx(count);
      for (auto& i : idx) i = row(rng);
      if (count > 0) idx.back() = rows_total - 1;
      std::vector<float> dst(count * width), dst2(count * width);
      cpu::gather_rows(src.data(), width, idx.data(), count, dst.data());
      thrust_algo::gather_rows(omp, src.data(), width, idx.data(), count, dst2.data());
      ASSERT_TRUE(same_bits(dst, dst2));
      std::vector<std::uint8_t> l(count), l2(count);
      cpu::gather_bytes(labels.data(), idx.data(), count, l.data());
      thrust_algo::gather_bytes(omp, labels.data(), idx.data(), count, l2.data());
      ASSERT_EQ(l, l2);
    }
  }
}

}  // namespace
}  // namespace gw::kernels
