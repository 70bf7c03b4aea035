// CPU implementations of kernels/sparse_wire.h (internal: call the Stream-taking API instead).
// Host memory; arguments already checked by the API; semantics exactly those documented there.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/sparse_wire.h"

namespace gw::kernels::cpu {

std::size_t encode_wire(const std::uint32_t* indices, std::size_t count, const float* v,
                        std::uint32_t* words, std::uint64_t* scratch, std::uint32_t bits);
void keep_wire_error_at(float* x, const std::uint32_t* indices, std::size_t count,
                        std::uint32_t bits);
WireCheck decode_wire(const std::uint32_t* words, std::size_t available, std::size_t numel,
                      std::size_t max_pairs, bool finite_values_only, std::uint32_t* pairs,
                      std::uint64_t* scratch, std::uint32_t bits);

}  // namespace gw::kernels::cpu
