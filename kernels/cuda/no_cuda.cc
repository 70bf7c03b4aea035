// The CUDA entry points in a build without nvcc: every call is a clear error, never a crash.
#include <stdexcept>
#include <string>

#include "kernels/cuda/elementwise_cuda.h"
#include "kernels/device.h"

namespace gw::kernels {

bool cuda_device_available() { return false; }

namespace cuda {

namespace {

[[noreturn]] void throw_unavailable(const char* function) {
  throw std::runtime_error(std::string("gradwire was built without CUDA: ") + function +
                           " on Device::kCuda is unavailable");
}

}  // namespace

// Even for n == 0: asking for kCuda in this build is a configuration error worth reporting early.
void scale(float*, float, std::size_t) { throw_unavailable("scale"); }
void axpy(float, const float*, float*, std::size_t) { throw_unavailable("axpy"); }
void cast_fp32_to_fp16(const float*, Half*, std::size_t) { throw_unavailable("cast_fp32_to_fp16"); }
void cast_fp16_to_fp32(const Half*, float*, std::size_t) { throw_unavailable("cast_fp16_to_fp32"); }
double sum_of_squares(const float*, std::size_t) { throw_unavailable("sum_of_squares"); }
bool all_finite(const float*, std::size_t) { throw_unavailable("all_finite"); }
bool scale_and_check_finite(float*, float, std::size_t) {
  throw_unavailable("scale_and_check_finite");
}

}  // namespace cuda
}  // namespace gw::kernels
