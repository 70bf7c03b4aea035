// GW_CUDA_CHECK(expr): every CUDA runtime call goes through it, so a failure becomes a
// std::runtime_error naming the call, where it was made and CUDA's description of the error.
// Plain C++ over the runtime API: usable from .cu files and from host code that calls CUDA.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

#define GW_CUDA_CHECK(expr) \
  ::gw::kernels::cuda::check_cuda_status((expr), #expr, __FILE__, __LINE__)

// Right after a <<<...>>> launch, which returns no status; `what` (a C string) names the kernel.
#define GW_CUDA_CHECK_LAUNCH(what) \
  ::gw::kernels::cuda::check_cuda_status(cudaGetLastError(), (what), __FILE__, __LINE__)

namespace gw::kernels::cuda {

inline void check_cuda_status(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  // The runtime also keeps this error as its "last error"; clear it so that a later
  // cudaGetLastError() after a kernel launch does not report it a second time, against that launch.
  cudaGetLastError();
  throw std::runtime_error(std::string(call) + " failed at " + file + ":" + std::to_string(line) +
                           ": " + cudaGetErrorString(status));
}

}  // namespace gw::kernels::cuda
