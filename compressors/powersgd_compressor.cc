#include "compressors/powersgd_compressor.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/elementwise.h"
#include "kernels/low_rank.h"

namespace gw::compressors {
namespace {

// The first Q of parameter p, the same on every rank and machine: SplitMix64 of (p, element),
// its top 24 bits as a uniform value in [-1, 1). Any Q that is not orthogonal to the gradient's
// leading directions works; the power iteration turns it towards them.
float seeded_value(std::size_t p, std::size_t i) {
  std::uint64_t z = (static_cast<std::uint64_t>(p) << 32) ^ static_cast<std::uint64_t>(i);
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

}  // namespace

PowerSgdCompressor::PowerSgdCompressor(const std::vector<std::size_t>& numels,
                                       const std::vector<std::size_t>& rows,
                                       PowerSgdOptions options)
    : options_(options) {
  if (options_.rank == 0) throw std::invalid_argument("powersgd: the rank must be at least 1");
  if (rows.size() != numels.size()) {
    throw std::invalid_argument("powersgd: " + std::to_string(rows.size()) + " row counts for " +
                                std::to_string(numels.size()) + " parameters");
  }
  shapes_.resize(numels.size());
  std::vector<bool> low_rank(numels.size());
  std::vector<std::size_t> q_numels(numels.size());
  for (std::size_t p = 0; p < numels.size(); ++p) {
    if (rows[p] == 0) continue;
    if (numels[p] % rows[p] != 0) {
      throw std::invalid_argument("powersgd: parameter " + std::to_string(p) + " has " +
                                  std::to_string(numels[p]) + " elements, not a multiple of its " +
                                  std::to_string(rows[p]) + " rows");
    }
    LowRankShape s;
    s.rows = rows[p];
    s.cols = numels[p] / rows[p];
    s.rank = std::min({options_.rank, s.rows, s.cols});
    const bool smaller = s.rank * (s.rows + s.cols) < s.rows * s.cols;
    if (options_.only_when_smaller && !smaller) continue;
    shapes_[p] = s;
    low_rank[p] = true;
    q_numels[p] = s.cols * s.rank;
  }
  error_ = StateArrays(numels, low_rank);
  q_ = StateArrays(q_numels, low_rank);
  std::vector<std::vector<float>> first_q(numels.size());
  for (std::size_t p = 0; p < numels.size(); ++p) {
    first_q[p].resize(q_numels[p]);
    for (std::size_t i = 0; i < q_numels[p]; ++i) first_q[p][i] = seeded_value(p, i);
  }
  q_.assign(first_q);
}

void PowerSgdCompressor::move_state_to(const kernels::Stream& stream) {
  error_.move_to(stream);
  q_.move_to(stream);
}

void PowerSgdCompressor::plan_into(const BucketView& bucket, int /*world_size*/,
                                   ExchangePlan& out) const {
  out.clear();
  const bool compressing = step_ >= options_.start_step;
  for (std::size_t pos = 0; pos < bucket.tensors.size(); ++pos) {
    const LowRankShape& s = shapes_[bucket.tensors[pos].parameter];
    if (compressing && s.rank > 0) {
      out.low_rank.push_back(pos);
      out.shapes.push_back(s);
    } else {
      out.dense.push_back(pos);
    }
  }
}

void PowerSgdCompressor::encode(const BucketView& bucket, const ExchangePlan& plan,
                                int /*world_size*/, const EncodedBucket& out) {
  std::size_t at = 0;
  for (std::size_t pos : plan.dense) {
    const TensorSlot& t = bucket.tensors[pos];
    if (out.f32 + at != bucket.data + t.offset) {
      kernels::copy_bytes(out.f32 + at, bucket.data + t.offset, t.numel * sizeof(float), stream_);
    }
    at += t.numel;
  }
  float* p = out.factors;
  for (std::size_t j = 0; j < plan.low_rank.size(); ++j) {
    const TensorSlot& t = bucket.tensors[plan.low_rank[j]];
    const LowRankShape& s = plan.shapes[j];
    float* m = error_.data(t.parameter);
    kernels::axpy(1.0f, bucket.data + t.offset, m, t.numel, stream_);
    kernels::low_rank_project(m, s.rows, s.cols, q_.data(t.parameter), s.rank, p, stream_);
    p += s.rows * s.rank;
  }
}

void PowerSgdCompressor::project(const BucketView& bucket, const ExchangePlan& plan, float* p,
                                 float* q) {
  for (std::size_t j = 0; j < plan.low_rank.size(); ++j) {
    const TensorSlot& t = bucket.tensors[plan.low_rank[j]];
    const LowRankShape& s = plan.shapes[j];
    float* m = error_.data(t.parameter);
    kernels::orthonormalize_columns(p, s.rows, s.rank, stream_);
    kernels::low_rank_back(m, s.rows, s.cols, p, s.rank, q, stream_);
    kernels::low_rank_restore(p, s.rows, s.rank, q, s.cols, m, /*subtract=*/true, stream_);
    p += s.rows * s.rank;
    q += s.cols * s.rank;
  }
}

void PowerSgdCompressor::reconstruct(const BucketView& bucket, const ExchangePlan& plan,
                                     const float* p, const float* q) {
  for (std::size_t j = 0; j < plan.low_rank.size(); ++j) {
    const TensorSlot& t = bucket.tensors[plan.low_rank[j]];
    const LowRankShape& s = plan.shapes[j];
    kernels::low_rank_restore(p, s.rows, s.rank, q, s.cols, bucket.data + t.offset,
                              /*subtract=*/false, stream_);
    kernels::copy_bytes(q_.data(t.parameter), q, s.cols * s.rank * sizeof(float), stream_);
    p += s.rows * s.rank;
    q += s.cols * s.rank;
  }
}

void PowerSgdCompressor::save_state(std::ostream& out) const {
  save_state_arrays(out, name(), step_, {&error_, &q_});
}

void PowerSgdCompressor::load_state(std::istream& in) {
  load_state_arrays(in, name(), &step_, {&error_, &q_});
}

}  // namespace gw::compressors
