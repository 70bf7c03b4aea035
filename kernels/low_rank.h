// The low-rank primitives of the powersgd compressor (Note [PowerSGD], compressors/
// powersgd_compressor.h): the two skinny products of one power-iteration step, the orthonormal
// basis of its first factor, and the product of the factors back into a matrix.
//
// A tensor is taken as a row-major matrix M [rows, cols]; its factors are P [rows, rank] and
// Q [cols, rank], also row-major, with rank small (PowerSGD's 1 to a few dozen). The products are
// written as fixed-order dot products rather than GEMM calls: with a rank this small they are
// matrix-vector products, bound by reading M once, and a fixed order with every multiply and add
// rounded on its own (kernels/thrust/float_ops.h) gives the same bits on the host, under Thrust's
// OpenMP system and on a GPU, so every rank computes the same basis from the same summed P
// wherever it runs. A BLAS would give each device its own rounding.
//
// Each primitive runs on the Stream given last (Note [Streams]): the host (kernels/cpu/
// low_rank_cpu.cc, plain loops) or a CUDA stream (the Thrust algorithms of
// kernels/thrust/low_rank_thrust.h, Note [One algorithm source]). Pointers are memory where the
// stream works; outputs never overlap inputs unless a primitive says so. rows, cols or rank 0 is
// valid and touches no memory. Nothing waits for the stream. On a CUDA stream in a build without
// CUDA every primitive throws std::runtime_error.
#pragma once

#include <cstddef>

#include "kernels/stream.h"

namespace gw::kernels {

// p[i, j] = sum over c = 0, 1, ... of m[i, c] * q[c, j], from 0.0f: P = M Q.
void low_rank_project(const float* m, std::size_t rows, std::size_t cols, const float* q,
                      std::size_t rank, float* p, const Stream& stream);

// q[c, j] = sum over i = 0, 1, ... of m[i, c] * p[i, j], from 0.0f: Q = M^T P.
void low_rank_back(const float* m, std::size_t rows, std::size_t cols, const float* p,
                   std::size_t rank, float* q, const Stream& stream);

// Makes the columns of p [rows, rank] orthonormal, in place, by modified Gram-Schmidt in column
// order: column j, for each earlier column l in order, loses d * p[:, l] with d = the dot product
// of the two (summed over i in order, from 0.0f); then it is divided by its norm
// (sqrt of the sum of squares, in order). A column whose norm is 0 at that point (M Q had fewer
// independent columns than rank, or M is 0) is replaced by the first unit vector e_i,
// i = 0, 1, ..., rows - 1, whose remainder after the earlier columns is not 0, and that remainder
// is divided by its norm; so P keeps orthonormal columns and a later step's Q = M^T P is not
// stuck at zero. Columns j >= rows, which cannot be independent of the first rows, become 0.
// Runs as one sequential pass (rows * rank^2 operations): the order is the host loop's on every
// device.
void orthonormalize_columns(float* p, std::size_t rows, std::size_t rank, const Stream& stream);

// out[i, c] = sum over j = 0, 1, ... of p[i, j] * q[c, j], from 0.0f: P Q^T. With `subtract`,
// out[i, c] = out[i, c] - that sum instead (what error feedback keeps: M - P Q^T).
void low_rank_restore(const float* p, std::size_t rows, std::size_t rank, const float* q,
                      std::size_t cols, float* out, bool subtract, const Stream& stream);

}  // namespace gw::kernels
