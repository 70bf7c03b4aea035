// IEEE 754 binary16 storage type shared by the CPU and CUDA implementations.
//
// gw::Half is 16 bits of storage and nothing else (same size and layout as CUDA's __half and as
// _Float16), so buffers of it can be handed to either side without conversion. Arithmetic happens
// after a cast to fp32 (kernels/elementwise.h).
#pragma once

#include <cstdint>

namespace gw {

struct Half {
  std::uint16_t bits;
};
static_assert(sizeof(Half) == 2, "gw::Half must be 16 bits");

}  // namespace gw
