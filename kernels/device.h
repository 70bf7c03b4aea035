// Where a buffer lives and so which implementation of a primitive runs on it.
#pragma once

#include <string>

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
// How many CUDA devices this process sees: 0 in a build without CUDA, or without a usable device.
// Never throws.
int cuda_device_count();
// The PCI bus id of CUDA device `device` ("0000:3b:00.0"): names one physical GPU of a node,
// whatever CUDA_VISIBLE_DEVICES made its ordinal in this process. Throws std::runtime_error for a
// device that cannot be queried, and in a build without CUDA.
std::string cuda_device_bus_id(int device);

}  // namespace kernels
}  // namespace gw
