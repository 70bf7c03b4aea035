// The Thrust execution policies the .cu files instantiate kernels/thrust/ with (internal; nvcc
// only). Work is enqueued on the caller's stream, never on CUDA's legacy default stream
// (Note [Streams]); the stream's device must be the current one (Stream::make_current).
#pragma once

#include <cuda_runtime.h>

#include <thrust/execution_policy.h>
#include <cstddef>

namespace gw::kernels::cuda {

// Note [Thrust's temporaries on the stream]
// Thrust takes the temporary storage of an algorithm (sort, copy_if, reduce, ...) with
// cudaMalloc and gives it back with cudaFree, which waits for the whole device. On an H200 the
// DDP hook's dgc made 89 cudaMalloc and 89 cudaFree calls per step of the reference MLP
// (results/gpu/benches/2026-11-30_NVIDIA_H200_686c9c0_ddp_hooks.json, its profile). Instead the
// temporaries come from CUDA's stream-ordered allocator: cudaMallocAsync and cudaFreeAsync on the
// algorithm's stream, from the device's default memory pool, whose release threshold is raised
// so that it keeps what it has rather than trimming at each synchronisation. Memory freed that
// way is reused in the stream's order, so no algorithm waits for another stream or the device.
// On a device without memory pools (cudaDevAttrMemoryPoolsSupported), cudaMalloc and cudaFree
// as before.
class StreamTemporaries {
 public:
  using value_type = char;
  explicit StreamTemporaries(cudaStream_t stream);
  char* allocate(std::ptrdiff_t bytes);
  void deallocate(char* p, std::size_t bytes) noexcept;

 private:
  cudaStream_t stream_;
  bool pooled_;
};

// For algorithms whose results stay on the device: returns as soon as the work is enqueued.
inline auto on_stream(void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  return thrust::cuda::par_nosync(StreamTemporaries(s)).on(s);
}

// For algorithms that hand a value back to the host (count_if, reduce, copy_if's end): waits for
// the stream.
inline auto on_stream_synced(void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  return thrust::cuda::par(StreamTemporaries(s)).on(s);
}

}  // namespace gw::kernels::cuda
