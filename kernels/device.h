// Where a buffer lives and so which implementation of a primitive runs on it.
#pragma once

namespace gw {

enum class Device {
  kHost,  // ordinary host memory; CPU implementation in kernels/cpu
  kCuda,  // CUDA device memory (current device, default stream); implementation in kernels/cuda
};

const char* to_string(Device device);

namespace kernels {

// Whether kCuda primitives can run here: false in a build without CUDA, and in a CUDA build when
// the runtime reports no usable device (no GPU, no driver). Never throws.
bool cuda_device_available();

}  // namespace kernels
}  // namespace gw
