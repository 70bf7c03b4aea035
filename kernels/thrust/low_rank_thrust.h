// The device algorithms of kernels/low_rank.h, as Thrust templates over the execution policy (See
// Note [One algorithm source] in kernels/thrust/sparse_thrust.h). Internal to kernels/.
//
// Every sum is the CPU loop's (kernels/cpu/low_rank_cpu.cc): one thread walks it in index order
// from 0.0f, each multiply and add rounded on its own, so the bits are the CPU's by construction.
// The products give a thread to each output element; the Gram-Schmidt pass is sequential by its
// definition (each column depends on all earlier ones, each dot product on the previous
// subtraction), so it is one thread.
#pragma once

#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <cstddef>

#include "kernels/host_device.h"
#include "kernels/thrust/float_ops.h"

namespace gw::kernels::thrust_algo {

// Thread t = i * rank + j: p[i, j] = sum over c of m[i, c] * q[c, j].
struct LowRankProjectOp {
  const float* m;
  std::size_t cols;
  const float* q;
  std::size_t rank;
  float* p;
  GW_HOST_DEVICE void operator()(std::size_t t) const {
    const std::size_t i = t / rank, j = t % rank;
    const float* mi = m + i * cols;
    float sum = 0.0f;
    for (std::size_t c = 0; c < cols; ++c) sum = add_rn(sum, mul_rn(mi[c], q[c * rank + j]));
    p[t] = sum;
  }
};

// Thread t = c * rank + j: q[c, j] = sum over i of m[i, c] * p[i, j].
struct LowRankBackOp {
  const float* m;
  std::size_t rows;
  std::size_t cols;
  const float* p;
  std::size_t rank;
  float* q;
  GW_HOST_DEVICE void operator()(std::size_t t) const {
    const std::size_t c = t / rank, j = t % rank;
    float sum = 0.0f;
    for (std::size_t i = 0; i < rows; ++i) {
      sum = add_rn(sum, mul_rn(m[i * cols + c], p[i * rank + j]));
    }
    q[t] = sum;
  }
};

// Thread t = i * cols + c: out[i, c] = sum over j of p[i, j] * q[c, j] (or out[i, c] minus it).
struct LowRankRestoreOp {
  const float* p;
  std::size_t rank;
  const float* q;
  std::size_t cols;
  float* out;
  bool subtract;
  GW_HOST_DEVICE void operator()(std::size_t t) const {
    const std::size_t i = t / cols, c = t % cols;
    const float* pi = p + i * rank;
    const float* qc = q + c * rank;
    float sum = 0.0f;
    for (std::size_t j = 0; j < rank; ++j) sum = add_rn(sum, mul_rn(pi[j], qc[j]));
    out[t] = subtract ? sub_rn(out[t], sum) : sum;
  }
};

// The whole of orthonormalize_columns, run by thread 0 alone: the CPU loop, operation for
// operation.
struct OrthonormalizeColumnsOp {
  float* p;
  std::size_t rows;
  std::size_t rank;

  // Column j loses its projection on each earlier column in order; returns the remainder's norm.
  GW_HOST_DEVICE float remove_earlier_columns(std::size_t j) const {
    for (std::size_t l = 0; l < j; ++l) {
      float d = 0.0f;
      for (std::size_t i = 0; i < rows; ++i) {
        d = add_rn(d, mul_rn(p[i * rank + j], p[i * rank + l]));
      }
      for (std::size_t i = 0; i < rows; ++i) {
        p[i * rank + j] = sub_rn(p[i * rank + j], mul_rn(d, p[i * rank + l]));
      }
    }
    float sum = 0.0f;
    for (std::size_t i = 0; i < rows; ++i) {
      sum = add_rn(sum, mul_rn(p[i * rank + j], p[i * rank + j]));
    }
    return sqrt_rn(sum);
  }

  GW_HOST_DEVICE void operator()(std::size_t) const {
    const std::size_t independent = rank < rows ? rank : rows;
    for (std::size_t j = 0; j < independent; ++j) {
      float norm = remove_earlier_columns(j);
      for (std::size_t e = 0; norm == 0.0f && e < rows; ++e) {
        for (std::size_t i = 0; i < rows; ++i) p[i * rank + j] = i == e ? 1.0f : 0.0f;
        norm = remove_earlier_columns(j);
      }
      if (norm == 0.0f) continue;
      for (std::size_t i = 0; i < rows; ++i) p[i * rank + j] = div_rn(p[i * rank + j], norm);
    }
    for (std::size_t i = 0; i < rows; ++i) {
      for (std::size_t j = independent; j < rank; ++j) p[i * rank + j] = 0.0f;
    }
  }
};

template <class Policy>
void low_rank_project(const Policy& policy, const float* m, std::size_t rows, std::size_t cols,
                      const float* q, std::size_t rank, float* p) {
  if (rows == 0 || cols == 0 || rank == 0) return;
  const thrust::counting_iterator<std::size_t> first(0);
  thrust::for_each(policy, first, first + rows * rank, LowRankProjectOp{m, cols, q, rank, p});
}

template <class Policy>
void low_rank_back(const Policy& policy, const float* m, std::size_t rows, std::size_t cols,
                   const float* p, std::size_t rank, float* q) {
  if (rows == 0 || cols == 0 || rank == 0) return;
  const thrust::counting_iterator<std::size_t> first(0);
  thrust::for_each(policy, first, first + cols * rank, LowRankBackOp{m, rows, cols, p, rank, q});
}

template <class Policy>
void orthonormalize_columns(const Policy& policy, float* p, std::size_t rows, std::size_t rank) {
  if (rows == 0 || rank == 0) return;
  const thrust::counting_iterator<std::size_t> first(0);
  thrust::for_each(policy, first, first + 1, OrthonormalizeColumnsOp{p, rows, rank});
}

template <class Policy>
void low_rank_restore(const Policy& policy, const float* p, std::size_t rows, std::size_t rank,
                      const float* q, std::size_t cols, float* out, bool subtract) {
  if (rows == 0 || rank == 0 || cols == 0) return;
  const thrust::counting_iterator<std::size_t> first(0);
  thrust::for_each(policy, first, first + rows * cols,
                   LowRankRestoreOp{p, rank, q, cols, out, subtract});
}

}  // namespace gw::kernels::thrust_algo
