// CPU implementations of kernels/low_rank.h (internal: call the Stream-taking API instead). Host
// memory; semantics exactly those documented there.
#pragma once

#include <cstddef>

namespace gw::kernels::cpu {

void low_rank_project(const float* m, std::size_t rows, std::size_t cols, const float* q,
                      std::size_t rank, float* p);
void low_rank_back(const float* m, std::size_t rows, std::size_t cols, const float* p,
                   std::size_t rank, float* q);
void orthonormalize_columns(float* p, std::size_t rows, std::size_t rank);
void low_rank_restore(const float* p, std::size_t rows, std::size_t rank, const float* q,
                      std::size_t cols, float* out, bool subtract);

}  // namespace gw::kernels::cpu
