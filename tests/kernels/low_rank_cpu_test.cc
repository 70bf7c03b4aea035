// kernels/low_rank.h on the host stream: the products against hand-computed values and an in-order
// scalar reference, and orthonormalize_columns against the properties PowerSGD relies on
// (orthonormal columns, the span of the input kept, zero columns replaced, the full-rank round
// trip giving M back).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/low_rank.h"
#include "tests/kernels/kernels_test_util.h"

namespace gw::kernels {
namespace {

using test_util::same_bits;

const Stream kHost = Stream::host();

std::vector<float> normal_floats(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

std::string shape_name(std::size_t rows, std::size_t rank) {
  return "rows " + std::to_string(rows) + ", rank " + std::to_string(rank);
}

// Columns a and b of p [rows, rank], dot product in double.
double column_dot(const std::vector<float>& p, std::size_t rows, std::size_t rank, std::size_t a,
                  std::size_t b) {
  double d = 0.0;
  for (std::size_t i = 0; i < rows; ++i) {
    d += static_cast<double>(p[i * rank + a]) * static_cast<double>(p[i * rank + b]);
  }
  return d;
}

// The first min(rows, rank) columns are orthonormal, the rest 0.
void expect_orthonormal(const std::vector<float>& p, std::size_t rows, std::size_t rank,
                        double tolerance) {
  const std::size_t independent = std::min(rows, rank);
  for (std::size_t a = 0; a < independent; ++a) {
    for (std::size_t b = 0; b < independent; ++b) {
      EXPECT_NEAR(column_dot(p, rows, rank, a, b), a == b ? 1.0 : 0.0, tolerance)
          << "columns " << a << ", " << b;
    }
  }
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = independent; j < rank; ++j) {
      EXPECT_EQ(test_util::float_bits(p[i * rank + j]), 0u) << "p[" << i << ", " << j << "]";
    }
  }
}

TEST(LowRankCpu, ProjectHandComputed) {
  const std::vector<float> m = {1, 2, 3,  //
                                4, 5, 6};
  const std::vector<float> q = {1, 0,  //
                                0, 1,  //
                                1, -1};
  std::vector<float> p(4, -7.0f);
  low_rank_project(m.data(), 2, 3, q.data(), 2, p.data(), kHost);
  EXPECT_EQ(p, (std::vector<float>{4, -1, 10, -1}));
}

TEST(LowRankCpu, BackHandComputed) {
  const std::vector<float> m = {1, 2, 3,  //
                                4, 5, 6};
  const std::vector<float> p = {1, 2,  //
                                3, -1};
  std::vector<float> q(6, -7.0f);
  low_rank_back(m.data(), 2, 3, p.data(), 2, q.data(), kHost);
  EXPECT_EQ(q, (std::vector<float>{13, -2, 17, -1, 21, 0}));
}

TEST(LowRankCpu, RestoreHandComputedAndSubtracted) {
  const std::vector<float> p = {1, 2,  //
                                3, -1};
  const std::vector<float> q = {1, 0,  //
                                0, 1,  //
                                1, -1};
  std::vector<float> out(6, -7.0f);
  low_rank_restore(p.data(), 2, 2, q.data(), 3, out.data(), false, kHost);
  EXPECT_EQ(out, (std::vector<float>{1, 2, -1, 3, -1, 4}));
  std::vector<float> error(6, 10.0f);
  low_rank_restore(p.data(), 2, 2, q.data(), 3, error.data(), true, kHost);
  EXPECT_EQ(error, (std::vector<float>{9, 8, 11, 7, 11, 6}));
}

// 1 + 1e8 rounds to 1e8 in float, so the in-order sum 1 + 1e8 - 1e8 is 0 where any other order
// (or a wider accumulator) gives 1: the documented order, not just the value, is pinned.
TEST(LowRankCpu, SumsRunInIndexOrderInFloat) {
  const std::vector<float> row = {1.0f, 1e8f, -1e8f};
  const std::vector<float> ones = {1.0f, 1.0f, 1.0f};
  float p = -7.0f;
  low_rank_project(row.data(), 1, 3, ones.data(), 1, &p, kHost);
  EXPECT_EQ(p, 0.0f);
  float q = -7.0f;
  low_rank_back(row.data(), 3, 1, ones.data(), 1, &q, kHost);  // the same numbers as a column
  EXPECT_EQ(q, 0.0f);
  float out = -7.0f;
  low_rank_restore(row.data(), 1, 3, ones.data(), 1, &out, false, kHost);
  EXPECT_EQ(out, 0.0f);
}

// The documented sums, written the plainest way: same bits on random inputs of several shapes.
TEST(LowRankCpu, ProductsMatchInOrderReferenceBitForBit) {
  struct Shape {
    std::size_t rows, cols, rank;
  };
  for (const Shape s :
       {Shape{1, 1, 1}, Shape{7, 3, 2}, Shape{3, 7, 4}, Shape{64, 33, 5}, Shape{100, 257, 3},
        // The loops' cases (Note [Fast loops in the documented order]): each rank that has its
        // own instantiation, at row counts around the project block's; the run-time rank at the
        // largest the block holds, and above it.
        Shape{19, 1030, 1}, Shape{8, 40, 2}, Shape{17, 9, 4}, Shape{16, 11, 8}, Shape{9, 5, 64},
        Shape{3, 4, 65}}) {
    SCOPED_TRACE(std::to_string(s.rows) + " x " + std::to_string(s.cols) + ", rank " +
                 std::to_string(s.rank));
    const std::vector<float> m = normal_floats(s.rows * s.cols, 1);
    const std::vector<float> q = normal_floats(s.cols * s.rank, 2);
    const std::vector<float> p = normal_floats(s.rows * s.rank, 3);
    std::vector<float> ref_p(s.rows * s.rank), ref_q(s.cols * s.rank), ref_out(s.rows * s.cols);
    std::vector<float> ref_err = normal_floats(s.rows * s.cols, 4);
    for (std::size_t i = 0; i < s.rows; ++i) {
      for (std::size_t j = 0; j < s.rank; ++j) {
        float sum = 0.0f;
        for (std::size_t c = 0; c < s.cols; ++c) sum += m[i * s.cols + c] * q[c * s.rank + j];
        ref_p[i * s.rank + j] = sum;
      }
    }
    for (std::size_t c = 0; c < s.cols; ++c) {
      for (std::size_t j = 0; j < s.rank; ++j) {
        float sum = 0.0f;
        for (std::size_t i = 0; i < s.rows; ++i) sum += m[i * s.cols + c] * p[i * s.rank + j];
        ref_q[c * s.rank + j] = sum;
      }
    }
    std::vector<float> err = ref_err;
    for (std::size_t i = 0; i < s.rows; ++i) {
      for (std::size_t c = 0; c < s.cols; ++c) {
        float sum = 0.0f;
        for (std::size_t j = 0; j < s.rank; ++j) sum += p[i * s.rank + j] * q[c * s.rank + j];
        ref_out[i * s.cols + c] = sum;
        ref_err[i * s.cols + c] = ref_err[i * s.cols + c] - sum;
      }
    }
    std::vector<float> got_p(ref_p.size()), got_q(ref_q.size()), got_out(ref_out.size());
    low_rank_project(m.data(), s.rows, s.cols, q.data(), s.rank, got_p.data(), kHost);
    low_rank_back(m.data(), s.rows, s.cols, p.data(), s.rank, got_q.data(), kHost);
    low_rank_restore(p.data(), s.rows, s.rank, q.data(), s.cols, got_out.data(), false, kHost);
    low_rank_restore(p.data(), s.rows, s.rank, q.data(), s.cols, err.data(), true, kHost);
    EXPECT_TRUE(same_bits(ref_p, got_p));
    EXPECT_TRUE(same_bits(ref_q, got_q));
    EXPECT_TRUE(same_bits(ref_out, got_out));
    EXPECT_TRUE(same_bits(ref_err, err));
  }
}

TEST(LowRankCpu, OrthonormalizeGivesOrthonormalColumnsOnRandomInputs) {
  for (std::size_t rows : {1, 2, 7, 100}) {
    for (std::size_t rank = 1; rank <= 4; ++rank) {
      SCOPED_TRACE(shape_name(rows, rank));
      std::vector<float> p = normal_floats(rows * rank, static_cast<std::uint32_t>(rows + rank));
      orthonormalize_columns(p.data(), rows, rank, kHost);
      expect_orthonormal(p, rows, rank, 1e-5);
    }
  }
}

// Column 0 is the input's column 0 normalised, and each input column j < rows lies in the span of
// the first j + 1 output columns (Gram-Schmidt keeps the nested spans).
TEST(LowRankCpu, OrthonormalizeKeepsTheFirstDirectionAndTheSpans) {
  for (std::size_t rows : {1, 2, 7, 100}) {
    for (std::size_t rank = 1; rank <= 4; ++rank) {
      SCOPED_TRACE(shape_name(rows, rank));
      const std::vector<float> in = normal_floats(rows * rank, static_cast<std::uint32_t>(rank));
      std::vector<float> p = in;
      orthonormalize_columns(p.data(), rows, rank, kHost);
      const double norm0 = std::sqrt(column_dot(in, rows, rank, 0, 0));
      for (std::size_t i = 0; i < rows; ++i) {
        EXPECT_NEAR(p[i * rank], in[i * rank] / norm0, 1e-6) << "row " << i;
      }
      for (std::size_t j = 0; j < std::min(rows, rank); ++j) {
        // The input column less its projections on output columns 0..j, in double.
        std::vector<double> rest(rows);
        for (std::size_t i = 0; i < rows; ++i) rest[i] = in[i * rank + j];
        for (std::size_t l = 0; l <= j; ++l) {
          double d = 0.0;
          for (std::size_t i = 0; i < rows; ++i) d += rest[i] * p[i * rank + l];
          for (std::size_t i = 0; i < rows; ++i) rest[i] -= d * p[i * rank + l];
        }
        double rest_norm = 0.0;
        for (double r : rest) rest_norm += r * r;
        EXPECT_LT(std::sqrt(rest_norm), 1e-5 * std::sqrt(column_dot(in, rows, rank, j, j)))
            << "column " << j;
      }
    }
  }
}

// A zero column takes e_0's remainder after column 0 (e_0 is not in column 0's span), normalised.
TEST(LowRankCpu, OrthonormalizeReplacesAZeroColumn) {
  const std::size_t rows = 5, rank = 3;
  std::vector<float> p = normal_floats(rows * rank, 11);
  for (std::size_t i = 0; i < rows; ++i) p[i * rank + 1] = 0.0f;
  const std::vector<float> in = p;
  orthonormalize_columns(p.data(), rows, rank, kHost);
  expect_orthonormal(p, rows, rank, 1e-5);
  const double norm0 = std::sqrt(column_dot(in, rows, rank, 0, 0));
  std::vector<double> e0(rows, 0.0);
  e0[0] = 1.0;
  const double d = in[0] / norm0;  // <e_0, column 0>
  double rest_norm = 0.0;
  for (std::size_t i = 0; i < rows; ++i) {
    e0[i] -= d * in[i * rank] / norm0;
    rest_norm += e0[i] * e0[i];
  }
  rest_norm = std::sqrt(rest_norm);
  for (std::size_t i = 0; i < rows; ++i) {
    EXPECT_NEAR(p[i * rank + 1], e0[i] / rest_norm, 1e-5) << "row " << i;
  }
}

// Exact arithmetic throughout: column 0 is 2 e_0, so it becomes e_0; column 1 (3 e_0) and then e_0
// leave remainder 0, so column 1 is e_1; column 2 (e_1 + e_2) keeps e_2.
TEST(LowRankCpu, OrthonormalizeSkipsUnitVectorsInTheSpanOfEarlierColumns) {
  const std::size_t rows = 4, rank = 3;
  std::vector<float> p = {2, 3, 0,  //
                          0, 0, 1,  //
                          0, 0, 1,  //
                          0, 0, 0};
  orthonormalize_columns(p.data(), rows, rank, kHost);
  EXPECT_EQ(p, (std::vector<float>{1, 0, 0,  //
                                   0, 1, 0,  //
                                   0, 0, 1,  //
                                   0, 0, 0}));
}

TEST(LowRankCpu, OrthonormalizeOfZeroGivesUnitVectors) {
  for (std::size_t rows : {1, 2, 5}) {
    for (std::size_t rank = 1; rank <= 7; ++rank) {
      SCOPED_TRACE(shape_name(rows, rank));
      std::vector<float> p(rows * rank, 0.0f);
      orthonormalize_columns(p.data(), rows, rank, kHost);
      std::vector<float> expected(rows * rank, 0.0f);
      for (std::size_t j = 0; j < std::min(rows, rank); ++j) expected[j * rank + j] = 1.0f;
      EXPECT_TRUE(same_bits(expected, p));
    }
  }
}

TEST(LowRankCpu, OrthonormalizeZeroesColumnsPastRows) {
  const std::size_t rows = 2, rank = 4;
  std::vector<float> p = normal_floats(rows * rank, 21);
  orthonormalize_columns(p.data(), rows, rank, kHost);
  expect_orthonormal(p, rows, rank, 1e-6);  // also checks columns 2 and 3 are +0
}

// rows, cols or rank 0: nothing is read or written (null inputs, sentinel outputs), even where
// the mathematical result would be a zero matrix (an empty inner dimension).
TEST(LowRankCpu, ZeroSizesTouchNothing) {
  const float sentinel = -123.0f;
  std::vector<float> out(12, sentinel);
  const std::vector<float> untouched = out;
  low_rank_project(nullptr, 0, 3, nullptr, 2, nullptr, kHost);
  low_rank_project(nullptr, 3, 0, nullptr, 2, out.data(), kHost);
  low_rank_project(nullptr, 3, 2, nullptr, 0, out.data(), kHost);
  low_rank_back(nullptr, 0, 3, nullptr, 2, out.data(), kHost);
  low_rank_back(nullptr, 3, 0, nullptr, 2, nullptr, kHost);
  low_rank_back(nullptr, 3, 2, nullptr, 0, out.data(), kHost);
  orthonormalize_columns(nullptr, 0, 3, kHost);
  orthonormalize_columns(nullptr, 3, 0, kHost);
  for (bool subtract : {false, true}) {
    low_rank_restore(nullptr, 0, 2, nullptr, 3, nullptr, subtract, kHost);
    low_rank_restore(nullptr, 3, 0, nullptr, 4, out.data(), subtract, kHost);
    low_rank_restore(nullptr, 3, 2, nullptr, 0, out.data(), subtract, kHost);
  }
  EXPECT_TRUE(same_bits(untouched, out));
}

// With rank = rows <= cols, P = orthonormalize(M Q) spans every column of M (for random Q), so
// P (M^T P)^T = P P^T M is M: one power-iteration step loses nothing, and error feedback's
// remainder M - P Q^T is (close to) 0.
TEST(LowRankCpu, FullRankRoundTripGivesMBack) {
  struct Shape {
    std::size_t rows, cols;
  };
  for (const Shape s : {Shape{1, 1}, Shape{1, 5}, Shape{3, 3}, Shape{4, 10}, Shape{7, 20}}) {
    SCOPED_TRACE(std::to_string(s.rows) + " x " + std::to_string(s.cols));
    const std::size_t rank = s.rows;
    const std::vector<float> m = normal_floats(s.rows * s.cols, 31);
    const std::vector<float> q0 = normal_floats(s.cols * rank, 32);
    std::vector<float> p(s.rows * rank), q(s.cols * rank), restored(s.rows * s.cols);
    low_rank_project(m.data(), s.rows, s.cols, q0.data(), rank, p.data(), kHost);
    orthonormalize_columns(p.data(), s.rows, rank, kHost);
    low_rank_back(m.data(), s.rows, s.cols, p.data(), rank, q.data(), kHost);
    low_rank_restore(p.data(), s.rows, rank, q.data(), s.cols, restored.data(), false, kHost);
    std::vector<float> error = m;
    low_rank_restore(p.data(), s.rows, rank, q.data(), s.cols, error.data(), true, kHost);
    double m_norm = 0.0, diff_norm = 0.0, error_norm = 0.0;
    for (std::size_t k = 0; k < m.size(); ++k) {
      m_norm += static_cast<double>(m[k]) * m[k];
      diff_norm +=
          (static_cast<double>(restored[k]) - m[k]) * (static_cast<double>(restored[k]) - m[k]);
      error_norm += static_cast<double>(error[k]) * error[k];
    }
    EXPECT_LE(std::sqrt(diff_norm), 1e-4 * std::sqrt(m_norm));
    EXPECT_LE(std::sqrt(error_norm), 1e-4 * std::sqrt(m_norm));
  }
}

}  // namespace
}  // namespace gw::kernels
