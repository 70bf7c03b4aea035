// Blas in a build without CUDA: a clear error, never a crash.
#include <stdexcept>

#include "reference_trainer/gpu/gpu_ops.h"

namespace gw::trainer::gpu {
namespace {

[[noreturn]] void unavailable() {
  throw std::runtime_error(
      "gpu::Blas needs cuBLAS on a CUDA device, and gradwire was built without CUDA");
}

}  // namespace

Blas::Blas(const kernels::Stream& stream) : stream_(stream) { unavailable(); }
Blas::~Blas() = default;
void Blas::sgemm(bool, bool, std::size_t, std::size_t, std::size_t, float, const float*,
                 std::size_t, const float*, std::size_t, float, float*, std::size_t) {
  unavailable();
}
void Blas::gemm_fp16(bool, bool, std::size_t, std::size_t, std::size_t, float, const Half*,
                     std::size_t, const Half*, std::size_t, float, void*, bool, std::size_t) {
  unavailable();
}

}  // namespace gw::trainer::gpu
