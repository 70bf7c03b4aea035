// kernels/low_rank.h on a CUDA stream, against the host stream (which kernels_cpu_test checks
// against references, and kernels_thrust_omp_test checks the same Thrust algorithms against): what
// only a GPU can check is the stream plumbing and nvcc's arithmetic (no fused multiply-add, a
// correctly rounded division and square root). Built into kernels_sparse_cuda_test; skips when
// no CUDA device is usable.
#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "kernels/low_rank.h"
#include "kernels/stream.h"
#include "tests/kernels/cuda_test_util.h"
#include "tests/kernels/kernels_test_util.h"
#include "tests/kernels/sparse_test_inputs.h"

namespace gw::kernels {
namespace {

using test_inputs::Dist;
using test_inputs::make_values;
using test_util::DeviceCopy;
using test_util::same_bits;

const Stream kHost = Stream::host();

class CudaLowRankTest : public test_util::CudaStreamTest {};

struct Shape {
  std::size_t rows, cols, rank;
};
// Empty in each size, rank above rows, odd sizes, and a layer-sized matrix.
const std::vector<Shape> kShapes = {{0, 5, 2},    {5, 0, 2},     {5, 3, 0},   {1, 1, 1},
                                    {2, 5, 4},    {7, 3, 2},     {33, 65, 5}, {1000, 257, 4},
                                    {4099, 7, 1}, {512, 2048, 8}};

std::string shape_name(Shape s) {
  return std::to_string(s.rows) + " x " + std::to_string(s.cols) + ", rank " +
         std::to_string(s.rank);
}

TEST_F(CudaLowRankTest, ProductsMatchCpuBitForBit) {
  for (Shape s : kShapes) {
    SCOPED_TRACE(shape_name(s));
    const std::vector<float> m = make_values(Dist::kNormal, s.rows * s.cols, 1);
    const std::vector<float> q = make_values(Dist::kNormal, s.cols * s.rank, 2);
    const std::vector<float> p = make_values(Dist::kWideRange, s.rows * s.rank, 3);
    DeviceCopy<float> dm(m, stream_), dq(q, stream_), dp(p, stream_);

    std::vector<float> p_out(s.rows * s.rank, 7.0f);
    DeviceCopy<float> dp_out(p_out, stream_);
    low_rank_project(m.data(), s.rows, s.cols, q.data(), s.rank, p_out.data(), kHost);
    low_rank_project(dm.get(), s.rows, s.cols, dq.get(), s.rank, dp_out.get(), stream_);
    EXPECT_TRUE(same_bits(p_out, dp_out.to_host()));

    std::vector<float> q_out(s.cols * s.rank, 7.0f);
    DeviceCopy<float> dq_out(q_out, stream_);
    low_rank_back(m.data(), s.rows, s.cols, p.data(), s.rank, q_out.data(), kHost);
    low_rank_back(dm.get(), s.rows, s.cols, dp.get(), s.rank, dq_out.get(), stream_);
    EXPECT_TRUE(same_bits(q_out, dq_out.to_host()));

    for (bool subtract : {false, true}) {
      std::vector<float> out = make_values(Dist::kNormal, s.rows * s.cols, 4);
      DeviceCopy<float> dout(out, stream_);
      low_rank_restore(p.data(), s.rows, s.rank, q.data(), s.cols, out.data(), subtract, kHost);
      low_rank_restore(dp.get(), s.rows, s.rank, dq.get(), s.cols, dout.get(), subtract, stream_);
      EXPECT_TRUE(same_bits(out, dout.to_host())) << "subtract " << subtract;
    }
  }
}

// Random columns, and columns made degenerate: column 1 zero (the unit-vector replacement runs on
// the device too) and the last a copy of column 0 (a remainder of rounding noise).
TEST_F(CudaLowRankTest, OrthonormalizeMatchesCpuBitForBit) {
  for (Shape s : kShapes) {
    for (bool degenerate : {false, true}) {
      SCOPED_TRACE(shape_name(s) + (degenerate ? ", zero and repeated columns" : ""));
      std::vector<float> p = make_values(Dist::kNormal, s.rows * s.rank, 5);
      if (degenerate) {
        for (std::size_t i = 0; i < s.rows; ++i) {
          if (s.rank > 1) p[i * s.rank + 1] = 0.0f;
          if (s.rank > 2) p[i * s.rank + s.rank - 1] = p[i * s.rank];
        }
      }
      DeviceCopy<float> dp(p, stream_);
      orthonormalize_columns(p.data(), s.rows, s.rank, kHost);
      orthonormalize_columns(dp.get(), s.rows, s.rank, stream_);
      EXPECT_TRUE(same_bits(p, dp.to_host()));
    }
  }
}

}  // namespace
}  // namespace gw::kernels
