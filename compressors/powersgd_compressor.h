// GRADWIRE_COMPRESSOR=powersgd: each matrix-shaped gradient travels as the two factors of a rank-r
// approximation, found by one step of power iteration per training step, with error feedback.
//
// Note [PowerSGD]
// Vogels, Karimireddy and Jaggi (NeurIPS 2019). A parameter registered with rows (ParameterSpec::
// rows: a linear layer's outputs, a convolution's output channels) has its gradient taken as
// M [rows, cols], cols = numel / rows. Per step, on every rank, with Q [cols, r] the same
// everywhere (warm-started from the last step, seeded at first):
//  1. M = gradient + residual (error feedback);  P = M Q.
//  2. P is summed over the ranks, in the same allreduce as the bucket's dense tensors, and made
//     orthonormal (kernels::orthonormalize_columns, the same bits on every rank).
//  3. Q_i = M^T P on each rank i; the residual becomes M - P Q_i^T, what this rank's projection
//     onto P leaves out, so that over the ranks residuals plus applied values still sum to what
//     was accumulated (nothing is lost, it is sent later).
//  4. Q is summed over the ranks by a second allreduce; the bucket receives P (sum Q_i)^T, the sum
//     of every rank's projection, and that sum is next step's Q (warm start).
// A rank sends (rows + cols) r floats for the matrix instead of rows x cols. A tensor goes whole
// (fp32, in the first allreduce) when it has no rows (biases, any vector), or when its factors
// would not be smaller than it: r (rows + cols) >= rows x cols, r taken as min(r, rows, cols).
// Before GRADWIRE_POWERSGD_START_STEP every tensor goes whole, which lets the first, large
// gradients pass exactly while Q is still a random guess. The plan depends only on shapes, the
// configuration and the step (Note [Plans agree across ranks]).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "compressors/compressor.h"
#include "compressors/state_arrays.h"

namespace gw::compressors {

struct PowerSgdOptions {
  std::size_t rank = 1;         // GRADWIRE_POWERSGD_RANK
  std::int64_t start_step = 2;  // GRADWIRE_POWERSGD_START_STEP
  // Test-only: false sends every matrix as factors, even where they are not smaller than it, so
  // tests can check that a full-rank approximation is the gradient itself.
  bool only_when_smaller = true;
};

class PowerSgdCompressor final : public Compressor, public LowRankRound {
 public:
  // numels and rows: every parameter's element count and rows (0: not a matrix), in registration
  // order. Throws std::invalid_argument when rows do not divide a numel, the lists differ in
  // length, or the rank is 0.
  PowerSgdCompressor(const std::vector<std::size_t>& numels, const std::vector<std::size_t>& rows,
                     PowerSgdOptions options);

  Kind kind() const override { return Kind::kPowerSgd; }
  std::int64_t warmup_end_step() const override { return options_.start_step; }
  void plan_into(const BucketView& bucket, int world_size, ExchangePlan& out) const override;
  void encode(const BucketView& bucket, const ExchangePlan& plan, int world_size,
              const EncodedBucket& out) override;
  // The low-rank round (LowRankRound, Note [Compressor capabilities]).
  LowRankRound* low_rank() override { return this; }
  void project(const BucketView& bucket, const ExchangePlan& plan, float* p, float* q) override;
  void reconstruct(const BucketView& bucket, const ExchangePlan& plan, const float* p,
                   const float* q) override;
  void save_state(std::ostream& out) const override;
  void load_state(std::istream& in) override;

  // This rank's residual of parameter p (empty when it always goes whole); a host copy.
  std::vector<float> residual(std::size_t p) const { return error_.to_host(p); }

 private:
  void move_state_to(const kernels::Stream& stream) override;

  std::vector<LowRankShape> shapes_;  // per parameter; rank 0: always whole
  PowerSgdOptions options_;
  StateArrays error_;  // M between encode() and project(); afterwards what P Q_i^T left out
  StateArrays q_;      // the warm start, [cols, rank] per low-rank parameter
};

}  // namespace gw::compressors
