// The Thrust execution policies the .cu files instantiate kernels/thrust/ with (internal; nvcc
// only). Work is enqueued on the caller's stream, never on CUDA's legacy default stream
// (Note [Streams]); the stream's device must be the current one (Stream::make_current).
#pragma once

#include <cuda_runtime.h>
#include <thrust/execution_policy.h>

namespace gw::kernels::cuda {

// For algorithms whose results stay on the device: returns as soon as the work is enqueued.
inline auto on_stream(void* stream) {
  return thrust::cuda::par_nosync.on(static_cast<cudaStream_t>(stream));
}

// For algorithms that hand a value back to the host (count_if, reduce, copy_if's end): waits for
// the stream.
inline auto on_stream_synced(void* stream) {
  return thrust::cuda::par.on(static_cast<cudaStream_t>(stream));
}

}  // namespace gw::kernels::cuda
