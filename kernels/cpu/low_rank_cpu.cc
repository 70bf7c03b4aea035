#include "kernels/cpu/low_rank_cpu.h"

#include <cmath>

namespace gw::kernels::cpu {

// Each sum of kernels/low_rank.h is a running float from 0.0f over its index in order, one
// rounding per multiply and per add (this file builds with -ffp-contract=off): the order of
// kernels/thrust/low_rank_thrust.h, so both give the same bits.
//
// Note [Fast loops in the documented order]
// The order fixes each sum's own sequence, not which sums run together, so the loops interleave
// independent sums to keep the core busy: project sums kProjectRows rows at once (each row's sums
// a dependent chain of adds, so one row alone waits on every add's latency), back and restore
// run along the columns, whose sums are independent, which the compiler vectorises. The rank is
// a template parameter for the common ranks (Rank 0: the run-time rank), so that the innermost
// loop over it unrolls and the column loops are unit-stride at rank 1. M is read once.
namespace {

constexpr std::size_t kProjectRows = 8;
constexpr std::size_t kMaxRank = 64;  // GRADWIRE_POWERSGD_RANK's largest; above it, row by row

// p[i, j] for rows [i0, i0 + n), n <= kProjectRows.
template <std::size_t Rank>
void project_block(const float* __restrict m, std::size_t i0, std::size_t n, std::size_t cols,
                   const float* __restrict q, std::size_t rank_arg, float* __restrict p) {
  const std::size_t rank = Rank != 0 ? Rank : rank_arg;
  float acc[kProjectRows * (Rank != 0 ? Rank : kMaxRank)] = {};
  const float* rows[kProjectRows] = {};
  for (std::size_t r = 0; r < n; ++r) rows[r] = m + (i0 + r) * cols;
  if (n == kProjectRows) {
    for (std::size_t c = 0; c < cols; ++c) {
      const float* qc = q + c * rank;
      for (std::size_t r = 0; r < kProjectRows; ++r) {
        const float mrc = rows[r][c];
        for (std::size_t j = 0; j < rank; ++j) acc[r * rank + j] += mrc * qc[j];
      }
    }
  } else {
    for (std::size_t c = 0; c < cols; ++c) {
      const float* qc = q + c * rank;
      for (std::size_t r = 0; r < n; ++r) {
        const float mrc = rows[r][c];
        for (std::size_t j = 0; j < rank; ++j) acc[r * rank + j] += mrc * qc[j];
      }
    }
  }
  for (std::size_t k = 0; k < n * rank; ++k) p[i0 * rank + k] = acc[k];
}

// One row at a time, its sums in p itself: ranks above kMaxRank.
void project_by_row(const float* __restrict m, std::size_t rows, std::size_t cols,
                    const float* __restrict q, std::size_t rank, float* __restrict p) {
  for (std::size_t i = 0; i < rows; ++i) {
    const float* mi = m + i * cols;
    float* pi = p + i * rank;
    for (std::size_t j = 0; j < rank; ++j) pi[j] = 0.0f;
    for (std::size_t c = 0; c < cols; ++c) {
      const float mic = mi[c];
      const float* qc = q + c * rank;
      for (std::size_t j = 0; j < rank; ++j) pi[j] += mic * qc[j];
    }
  }
}

template <std::size_t Rank>
void project(const float* m, std::size_t rows, std::size_t cols, const float* q, std::size_t rank,
             float* p) {
  if (Rank == 0 && rank > kMaxRank) return project_by_row(m, rows, cols, q, rank, p);
  for (std::size_t i0 = 0; i0 < rows; i0 += kProjectRows) {
    const std::size_t n = rows - i0 < kProjectRows ? rows - i0 : kProjectRows;
    project_block<Rank>(m, i0, n, cols, q, rank, p);
  }
}

template <std::size_t Rank>
void back(const float* __restrict m, std::size_t rows, std::size_t cols, const float* __restrict p,
          std::size_t rank_arg, float* __restrict q) {
  const std::size_t rank = Rank != 0 ? Rank : rank_arg;
  for (std::size_t k = 0; k < cols * rank; ++k) q[k] = 0.0f;
  for (std::size_t i = 0; i < rows; ++i) {
    const float* mi = m + i * cols;
    const float* pi = p + i * rank;
    for (std::size_t c = 0; c < cols; ++c) {
      const float mic = mi[c];
      float* qc = q + c * rank;
      for (std::size_t j = 0; j < rank; ++j) qc[j] += mic * pi[j];
    }
  }
}

template <std::size_t Rank>
void restore(const float* __restrict p, std::size_t rows, std::size_t rank_arg,
             const float* __restrict q, std::size_t cols, float* __restrict out, bool subtract) {
  const std::size_t rank = Rank != 0 ? Rank : rank_arg;
  for (std::size_t i = 0; i < rows; ++i) {
    const float* pi = p + i * rank;
    float* oi = out + i * cols;
    if (subtract) {
      for (std::size_t c = 0; c < cols; ++c) {
        float s = 0.0f;
        for (std::size_t j = 0; j < rank; ++j) s += pi[j] * q[c * rank + j];
        oi[c] = oi[c] - s;
      }
    } else {
      for (std::size_t c = 0; c < cols; ++c) {
        float s = 0.0f;
        for (std::size_t j = 0; j < rank; ++j) s += pi[j] * q[c * rank + j];
        oi[c] = s;
      }
    }
  }
}

// f<Rank>(args...) with Rank the rank where it is one of the common ones, else 0 (run time).
#define GW_WITH_RANK(rank, f, ...) \
  switch (rank) {                  \
    case 1:                        \
      return f<1>(__VA_ARGS__);    \
    case 2:                        \
      return f<2>(__VA_ARGS__);    \
    case 4:                        \
      return f<4>(__VA_ARGS__);    \
    case 8:                        \
      return f<8>(__VA_ARGS__);    \
    default:                       \
      return f<0>(__VA_ARGS__);    \
  }

}  // namespace

void low_rank_project(const float* __restrict m, std::size_t rows, std::size_t cols,
                      const float* __restrict q, std::size_t rank, float* __restrict p) {
  if (rows == 0 || cols == 0 || rank == 0) return;
  GW_WITH_RANK(rank, project, m, rows, cols, q, rank, p)
}

void low_rank_back(const float* __restrict m, std::size_t rows, std::size_t cols,
                   const float* __restrict p, std::size_t rank, float* __restrict q) {
  if (rows == 0 || cols == 0 || rank == 0) return;
  GW_WITH_RANK(rank, back, m, rows, cols, p, rank, q)
}

namespace {

// Column j of p loses its projection on each earlier column, in order (modified Gram-Schmidt:
// each dot product is taken with the column as the previous ones left it); returns the norm of
// what remains.
float remove_earlier_columns(float* p, std::size_t rows, std::size_t rank, std::size_t j) {
  for (std::size_t l = 0; l < j; ++l) {
    float d = 0.0f;
    for (std::size_t i = 0; i < rows; ++i) d += p[i * rank + j] * p[i * rank + l];
    for (std::size_t i = 0; i < rows; ++i) p[i * rank + j] -= d * p[i * rank + l];
  }
  float sum = 0.0f;
  for (std::size_t i = 0; i < rows; ++i) sum += p[i * rank + j] * p[i * rank + j];
  return std::sqrt(sum);
}

}  // namespace

void orthonormalize_columns(float* p, std::size_t rows, std::size_t rank) {
  if (rows == 0 || rank == 0) return;
  const std::size_t independent = rank < rows ? rank : rows;
  for (std::size_t j = 0; j < independent; ++j) {
    float norm = remove_earlier_columns(p, rows, rank, j);
    // A column in the span of the earlier ones: the first unit vector that is not (j < rows
    // orthonormal columns leave some e_i a remainder in exact arithmetic; should rounding leave
    // none, the column is left as it is, of norm 0, rather than divided by 0).
    for (std::size_t e = 0; norm == 0.0f && e < rows; ++e) {
      for (std::size_t i = 0; i < rows; ++i) p[i * rank + j] = i == e ? 1.0f : 0.0f;
      norm = remove_earlier_columns(p, rows, rank, j);
    }
    if (norm == 0.0f) continue;
    for (std::size_t i = 0; i < rows; ++i) p[i * rank + j] /= norm;
  }
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = independent; j < rank; ++j) p[i * rank + j] = 0.0f;
  }
}

void low_rank_restore(const float* __restrict p, std::size_t rows, std::size_t rank,
                      const float* __restrict q, std::size_t cols, float* __restrict out,
                      bool subtract) {
  if (rows == 0 || rank == 0 || cols == 0) return;
  GW_WITH_RANK(rank, restore, p, rows, rank, q, cols, out, subtract)
}

#undef GW_WITH_RANK

}  // namespace gw::kernels::cpu
