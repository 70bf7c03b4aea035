// Where a buffer lives and so which implementation of a primitive runs on it.
#pragma once

#include <cstddef>
#include <string>

namespace gw {

enum class Device {
  kHost,  // ordinary host memory; CPU implementation in kernels/cpu
  // CUDA device memory, worked on through a non-blocking kernels::Stream on its device, never the
  // legacy default stream (Note [Streams], kernels/stream.h); implementation in kernels/cuda
  kCuda,
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
// The product name of CUDA device `device` ("NVIDIA H100 80GB HBM3"). Throws as
// cuda_device_bus_id.
std::string cuda_device_name(int device);

// CUDA device memory held through kernels::RawBuffer (so every kernels::Buffer): now, and the most
// held at once since the process started or since reset_cuda_memory_peak(); all devices together.
// What the libraries allocate themselves (Thrust's temporaries, cuBLAS's and NCCL's own) is not
// counted. Never throws; zero in a build without CUDA.
struct CudaMemoryUse {
  std::size_t held = 0;
  std::size_t peak = 0;
};
CudaMemoryUse cuda_memory_use();
void reset_cuda_memory_peak();

}  // namespace kernels
}  // namespace gw
