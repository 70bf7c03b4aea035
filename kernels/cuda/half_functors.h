// Per-element fp16 conversions for the CUDA kernels, on CUDA's own __half (the same 16 bits as
// gw::Half). cuda_fp16.h conversions are IEEE round-to-nearest-even, overflow to inf, NaN kept NaN,
// the same results as the CPU casts (NaN payloads aside).
#pragma once

#include <cuda_fp16.h>

#include "kernels/half.h"
#include "kernels/host_device.h"

namespace gw::kernels::cuda {

static_assert(sizeof(__half) == sizeof(Half) && alignof(__half) == alignof(Half),
              "gw::Half buffers are reinterpreted as __half");

struct Fp32ToFp16Op {
  GW_HOST_DEVICE __half operator()(float x) const { return __float2half_rn(x); }
};

struct Fp16ToFp32Op {
  GW_HOST_DEVICE float operator()(__half h) const { return __half2float(h); }
};

}  // namespace gw::kernels::cuda
