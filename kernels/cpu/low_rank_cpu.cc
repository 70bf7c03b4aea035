#include "kernels/cpu/low_rank_cpu.h"

#include <cmath>

namespace gw::kernels::cpu {

// Each sum of kernels/low_rank.h is a running float from 0.0f over its index in order, one
// rounding per multiply and per add (this file builds with -ffp-contract=off): the order of
// kernels/thrust/low_rank_thrust.h, so both give the same bits. The loops that stream M keep
// rank sums open at once, each still in its own order, so M is read once, row by row.

void low_rank_project(const float* __restrict m, std::size_t rows, std::size_t cols,
                      const float* __restrict q, std::size_t rank, float* __restrict p) {
  if (rows == 0 || cols == 0 || rank == 0) return;
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

void low_rank_back(const float* __restrict m, std::size_t rows, std::size_t cols,
                   const float* __restrict p, std::size_t rank, float* __restrict q) {
  if (rows == 0 || cols == 0 || rank == 0) return;
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
  for (std::size_t i = 0; i < rows; ++i) {
    const float* pi = p + i * rank;
    float* oi = out + i * cols;
    for (std::size_t c = 0; c < cols; ++c) {
      const float* qc = q + c * rank;
      float s = 0.0f;
      for (std::size_t j = 0; j < rank; ++j) s += pi[j] * qc[j];
      oi[c] = subtract ? oi[c] - s : s;
    }
  }
}

}  // namespace gw::kernels::cpu
