// The device top-k selector on a CUDA stream (internal: call TopkSelector::select with a Stream).
// Plain C++: defined in kernels/cuda/topk.cu, and by kernels/cuda/no_cuda.cc as an error.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/topk.h"

namespace gw::kernels::cuda {

// thrust_algo::select_topk on `stream` (cudaStream_t as void*); keys, scratch and candidates are
// device arrays of n elements.
std::size_t select_topk(const float* v, std::size_t n, std::size_t k, double sample_ratio,
                        std::uint64_t seed, std::uint32_t* out, std::uint32_t* keys,
                        std::uint32_t* scratch, std::uint32_t* candidates, TopkStats& stats,
                        void* stream);

}  // namespace gw::kernels::cuda
