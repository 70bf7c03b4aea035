// CUDA implementations of kernels/sparse_wire.h (internal: call the Stream-taking API instead).
// Device memory of the stream's device; `stream` is its cudaStream_t as void*. Defined in
// kernels/cuda/sparse_wire.cu (the Thrust algorithms of kernels/thrust/sparse_wire_thrust.h on the
// stream), and in a build without CUDA by kernels/cuda/no_cuda.cc, where each throws.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/sparse_wire.h"

namespace gw::kernels::cuda {

std::size_t encode_wire(const std::uint32_t* indices, std::size_t count, const float* v,
                        std::uint32_t* words, std::uint64_t* scratch, void* stream,
                        std::uint32_t bits);
void keep_wire_error_at(float* x, const std::uint32_t* indices, std::size_t count, void* stream,
                        std::uint32_t bits);
WireCheck decode_wire(const std::uint32_t* words, std::size_t available, std::size_t numel,
                      std::size_t max_pairs, bool finite_values_only, std::uint32_t* pairs,
                      std::uint64_t* scratch, void* stream, std::uint32_t bits);

}  // namespace gw::kernels::cuda
