// GW_HOST_DEVICE marks functions (functors, per-element math) that must build for both the host
// compiler and nvcc. Lambdas are not used for this: see docs/ARCHITECTURE.md, Layers, kernels/.
#pragma once

#if defined(__CUDACC__)
#define GW_HOST_DEVICE __host__ __device__
#else
#define GW_HOST_DEVICE
#endif
