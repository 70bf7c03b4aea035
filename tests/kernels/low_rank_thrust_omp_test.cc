// The device algorithms of kernels/low_rank.h (kernels/thrust/low_rank_thrust.h) under Thrust's
// OpenMP system, against the CPU loops (kernels/cpu/low_rank_cpu.cc): bit for bit, on shapes from
// empty up (odd sizes, rank above rows) and on every distribution of sparse_test_inputs.h, with
// zero and repeated columns for the Gram-Schmidt pass. Built into kernels_thrust_omp_test beside
// thrust_omp_test.cc (Note [One algorithm source]).
#include <gtest/gtest.h>
#include <thrust/system/omp/execution_policy.h>

#include <cstddef>
#include <string>
#include <vector>

#include "kernels/cpu/low_rank_cpu.h"
#include "kernels/thrust/low_rank_thrust.h"
#include "tests/kernels/kernels_test_util.h"
#include "tests/kernels/sparse_test_inputs.h"

namespace gw::kernels {
namespace {

using test_inputs::Dist;
using test_inputs::dist_name;
using test_inputs::kAllDists;
using test_inputs::make_values;
using test_util::same_bits;
using test_util::same_bits_or_nan;

const auto& omp = thrust::omp::par;

// M [rows, cols], factors of `rank` columns: empty in each size, single, odd, rank above rows,
// and large enough that both OpenMP threads get work.
struct Shape {
  std::size_t rows, cols, rank;
};
const std::vector<Shape> kShapes = {{0, 5, 2},   {5, 0, 2},     {5, 3, 0},     {1, 1, 1},
                                    {1, 3, 3},   {2, 5, 4},     {7, 3, 2},     {3, 7, 4},
                                    {33, 65, 5}, {100, 257, 3}, {1000, 33, 4}, {4099, 7, 1}};

std::string shape_name(Shape s, Dist d) {
  return std::to_string(s.rows) + " x " + std::to_string(s.cols) + ", rank " +
         std::to_string(s.rank) + ", " + dist_name(d);
}

// Bit for bit; under Specials a NaN matches any NaN: which of two NaNs an add or multiply returns
// depends on the operand order the compiler picked for it (kernels_test_util.h).
::testing::AssertionResult same(Dist dist, const std::vector<float>& expected,
                                const std::vector<float>& actual) {
  return dist == Dist::kSpecials ? same_bits_or_nan(expected, actual) : same_bits(expected, actual);
}

TEST(LowRankThrustOmp, ProjectAndBackMatchCpuBitForBit) {
  for (Shape s : kShapes) {
    for (Dist dist : kAllDists) {
      SCOPED_TRACE(shape_name(s, dist));
      const std::vector<float> m = make_values(dist, s.rows * s.cols, 1);
      const std::vector<float> q = make_values(Dist::kNormal, s.cols * s.rank, 2);
      const std::vector<float> p = make_values(Dist::kNormal, s.rows * s.rank, 3);
      // Sentinels that differ, so a write skipped on one side shows.
      std::vector<float> p1(s.rows * s.rank, 7.0f), p2(s.rows * s.rank, 7.0f);
      cpu::low_rank_project(m.data(), s.rows, s.cols, q.data(), s.rank, p1.data());
      thrust_algo::low_rank_project(omp, m.data(), s.rows, s.cols, q.data(), s.rank, p2.data());
      ASSERT_TRUE(same(dist, p1, p2));
      std::vector<float> q1(s.cols * s.rank, 7.0f), q2(s.cols * s.rank, 7.0f);
      cpu::low_rank_back(m.data(), s.rows, s.cols, p.data(), s.rank, q1.data());
      thrust_algo::low_rank_back(omp, m.data(), s.rows, s.cols, p.data(), s.rank, q2.data());
      ASSERT_TRUE(same(dist, q1, q2));
    }
  }
}

TEST(LowRankThrustOmp, RestoreMatchesCpuBitForBitAlsoSubtracting) {
  for (bool subtract : {false, true}) {
    for (Shape s : kShapes) {
      for (Dist dist : kAllDists) {
        SCOPED_TRACE(shape_name(s, dist) + (subtract ? ", subtract" : ""));
        const std::vector<float> p = make_values(dist, s.rows * s.rank, 4);
        const std::vector<float> q = make_values(Dist::kNormal, s.cols * s.rank, 5);
        std::vector<float> out1 = make_values(Dist::kNormal, s.rows * s.cols, 6), out2 = out1;
        cpu::low_rank_restore(p.data(), s.rows, s.rank, q.data(), s.cols, out1.data(), subtract);
        thrust_algo::low_rank_restore(omp, p.data(), s.rows, s.rank, q.data(), s.cols, out2.data(),
                                      subtract);
        ASSERT_TRUE(same(dist, out1, out2));
      }
    }
  }
}

// [rows, rank] inputs of the Gram-Schmidt pass: every distribution (Zeros and Ties give zero and
// dependent columns), and each also with column 1 zeroed (a remainder of exactly 0: the unit-vector
// replacement) and the last a copy of column 0 (a remainder of rounding noise, normalised).
TEST(LowRankThrustOmp, OrthonormalizeMatchesCpuBitForBit) {
  for (Shape s : kShapes) {
    for (Dist dist : kAllDists) {
      for (bool degenerate : {false, true}) {
        SCOPED_TRACE(shape_name(s, dist) + (degenerate ? ", zero and repeated columns" : ""));
        std::vector<float> p1 = make_values(dist, s.rows * s.rank, 7);
        if (degenerate) {
          for (std::size_t i = 0; i < s.rows; ++i) {
            if (s.rank > 1) p1[i * s.rank + 1] = 0.0f;
            if (s.rank > 2) p1[i * s.rank + s.rank - 1] = p1[i * s.rank];
          }
        }
        std::vector<float> p2 = p1;
        cpu::orthonormalize_columns(p1.data(), s.rows, s.rank);
        thrust_algo::orthonormalize_columns(omp, p2.data(), s.rows, s.rank);
        ASSERT_TRUE(same(dist, p1, p2));
      }
    }
  }
}

// One power-iteration step as the compressor runs it, each primitive on its own side: the chained
// results agree too (a difference in one would carry into the next).
TEST(LowRankThrustOmp, PowerIterationStepMatchesCpuBitForBit) {
  for (Shape s : kShapes) {
    SCOPED_TRACE(shape_name(s, Dist::kNormal));
    const std::vector<float> m = make_values(Dist::kNormal, s.rows * s.cols, 8);
    const std::vector<float> q0 = make_values(Dist::kNormal, s.cols * s.rank, 9);
    std::vector<float> p1(s.rows * s.rank), p2 = p1, q1(s.cols * s.rank), q2 = q1;
    std::vector<float> e1 = m, e2 = m;
    cpu::low_rank_project(m.data(), s.rows, s.cols, q0.data(), s.rank, p1.data());
    cpu::orthonormalize_columns(p1.data(), s.rows, s.rank);
    cpu::low_rank_back(m.data(), s.rows, s.cols, p1.data(), s.rank, q1.data());
    cpu::low_rank_restore(p1.data(), s.rows, s.rank, q1.data(), s.cols, e1.data(), true);
    thrust_algo::low_rank_project(omp, m.data(), s.rows, s.cols, q0.data(), s.rank, p2.data());
    thrust_algo::orthonormalize_columns(omp, p2.data(), s.rows, s.rank);
    thrust_algo::low_rank_back(omp, m.data(), s.rows, s.cols, p2.data(), s.rank, q2.data());
    thrust_algo::low_rank_restore(omp, p2.data(), s.rows, s.rank, q2.data(), s.cols, e2.data(),
                                  true);
    ASSERT_TRUE(same_bits(p1, p2));
    ASSERT_TRUE(same_bits(q1, q2));
    ASSERT_TRUE(same_bits(e1, e2));
  }
}

}  // namespace
}  // namespace gw::kernels
