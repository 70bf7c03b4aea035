// Per-element math of the primitives in kernels/elementwise.h, defined once for the CPU loops
// (kernels/cpu) and the CUDA kernels and CUB reductions (kernels/cuda), so that both devices
// compute the same thing. Functors, not lambdas: see docs/ARCHITECTURE.md, Layers, kernels/.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/host_device.h"

namespace gw::kernels {

// x * alpha
struct ScaleOp {
  float alpha;
  GW_HOST_DEVICE float operator()(float x) const { return x * alpha; }
};

// y + alpha * x, rounded after the multiply and after the add on both devices. nvcc would
// otherwise contract it into one fma, and CPU and CUDA results would differ in the last bit.
struct AxpyOp {
  float alpha;
  GW_HOST_DEVICE float operator()(float x, float y) const {
#if defined(__CUDA_ARCH__)
    return __fadd_rn(y, __fmul_rn(alpha, x));
#else
    return y + alpha * x;
#endif
  }
};

// x^2 in double: exact (a float's 24-bit significand squared fits in 53 bits).
struct SquareAsDoubleOp {
  GW_HOST_DEVICE double operator()(float x) const {
    const double d = x;
    return d * d;
  }
};

// Bit 31 set exactly when x is inf or NaN, with no branch: the exponent field plus one exponent
// ulp carries into bit 31 only when the exponent is all ones. OR these over a buffer and test
// bit 31.
struct NonFiniteBitOp {
  static constexpr std::uint32_t kFlag = 0x80000000u;
  GW_HOST_DEVICE std::uint32_t operator()(float x) const {
#if defined(__CUDA_ARCH__)
    const std::uint32_t bits = __float_as_uint(x);
#else
    std::uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
#endif
    return ((bits & 0x7f800000u) + 0x00800000u) & kFlag;
  }
};

struct BitOrOp {
  GW_HOST_DEVICE std::uint32_t operator()(std::uint32_t a, std::uint32_t b) const { return a | b; }
};

struct PlusDoubleOp {
  GW_HOST_DEVICE double operator()(double a, double b) const { return a + b; }
};

}  // namespace gw::kernels
