// CUDA implementations of kernels/elementwise.h: grid-stride kernels for the maps, CUB for the
// reductions. Everything is enqueued on the caller's stream (Note [Streams]); none of it uses the
// legacy default stream.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cub/cub.cuh>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/elementwise_cuda.h"
#include "kernels/cuda/half_functors.h"
#include "kernels/device.h"
#include "kernels/elementwise_functors.h"

namespace gw::kernels {

bool cuda_device_available() {
  int count = 0;
  const bool available = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  cudaGetLastError();  // a failed query (no driver, no device) must not leak into a later check
  return available;
}

namespace cuda {

namespace {

cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

constexpr unsigned kThreadsPerBlock = 256;
// Enough blocks to fill any current GPU several times over; grid-stride loops cover larger n.
constexpr std::size_t kMaxBlocks = 8192;

unsigned blocks_for(std::size_t n) {
  return static_cast<unsigned>(std::min((n + kThreadsPerBlock - 1) / kThreadsPerBlock, kMaxBlocks));
}

// out[i] = op(in[i]). Not __restrict__: scale runs in place (in == out).
template <typename In, typename Out, typename Op>
__global__ void map_kernel(const In* in, Out* out, std::size_t n, Op op) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = op(in[i]);
  }
}

// y[i] = op(x[i], y[i]). x may equal y.
template <typename Op>
__global__ void update_kernel(const float* x, float* y, std::size_t n, Op op) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    y[i] = op(x[i], y[i]);
  }
}

// x[i] = op(x[i]), ORing flag(x[i]) of the results into *flags: one atomic per thread that saw a
// set bit, so a clean buffer costs no atomics.
template <typename Op, typename FlagOp>
__global__ void map_and_flag_kernel(float* x, std::size_t n, Op op, FlagOp flag,
                                    unsigned int* flags) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  unsigned int bits = 0;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const float y = op(x[i]);
    x[i] = y;
    bits |= flag(y);
  }
  if (bits != 0) atomicOr(flags, bits);
}

// `what` names the operation in the error message of a failed launch.
template <typename In, typename Out, typename Op>
void map(const char* what, const In* in, Out* out, std::size_t n, Op op, cudaStream_t stream) {
  if (n == 0) return;
  map_kernel<<<blocks_for(n), kThreadsPerBlock, 0, stream>>>(in, out, n, op);
  GW_CUDA_CHECK_LAUNCH(what);
}

// Device memory from the stream-ordered allocator, freed in stream order when it goes out of scope.
class StreamOrderedBuffer {
 public:
  StreamOrderedBuffer(std::size_t bytes, cudaStream_t stream) : stream_(stream) {
    GW_CUDA_CHECK(cudaMallocAsync(&data_, bytes, stream_));
  }
  // No check: a destructor must not throw, and a failing free means the context is already
  // broken, which the next checked call reports.
  ~StreamOrderedBuffer() { cudaFreeAsync(data_, stream_); }
  StreamOrderedBuffer(const StreamOrderedBuffer&) = delete;
  StreamOrderedBuffer& operator=(const StreamOrderedBuffer&) = delete;

  unsigned char* data() const { return static_cast<unsigned char*>(data_); }

 private:
  void* data_ = nullptr;
  cudaStream_t stream_;
};

// reduce over transform(x[i]), starting from init; waits for the result.
template <typename Result, typename TransformOp, typename ReduceOp>
Result transform_reduce(const float* x, std::size_t n, TransformOp transform, ReduceOp reduce,
                        Result init, cudaStream_t stream) {
  std::size_t temp_bytes = 0;
  GW_CUDA_CHECK(cub::DeviceReduce::TransformReduce(
      nullptr, temp_bytes, x, static_cast<Result*>(nullptr), n, reduce, transform, init, stream));
  // One allocation: the result in the first slot, CUB's temporary storage after it (never null,
  // which CUB would take for a size query, and kept at CUB's 256-byte alignment).
  constexpr std::size_t kResultSlot = 256;
  static_assert(sizeof(Result) <= kResultSlot, "result does not fit its slot");
  StreamOrderedBuffer buffer(kResultSlot + temp_bytes, stream);
  Result* result_on_device = reinterpret_cast<Result*>(buffer.data());
  GW_CUDA_CHECK(cub::DeviceReduce::TransformReduce(buffer.data() + kResultSlot, temp_bytes, x,
                                                   result_on_device, n, reduce, transform, init,
                                                   stream));
  Result result{};
  GW_CUDA_CHECK(
      cudaMemcpyAsync(&result, result_on_device, sizeof(Result), cudaMemcpyDeviceToHost, stream));
  GW_CUDA_CHECK(cudaStreamSynchronize(stream));
  return result;
}

}  // namespace

void scale(float* x, float alpha, std::size_t n, void* stream) {
  map("launch of the scale kernel", x, x, n, ScaleOp{alpha}, as_stream(stream));
}

void axpy(float alpha, const float* x, float* y, std::size_t n, void* stream) {
  if (n == 0) return;
  update_kernel<<<blocks_for(n), kThreadsPerBlock, 0, as_stream(stream)>>>(x, y, n, AxpyOp{alpha});
  GW_CUDA_CHECK_LAUNCH("launch of the axpy kernel");
}

void cast_fp32_to_fp16(const float* in, Half* out, std::size_t n, void* stream) {
  map("launch of the fp32-to-fp16 kernel", in, reinterpret_cast<__half*>(out), n, Fp32ToFp16Op{},
      as_stream(stream));
}

void cast_fp16_to_fp32(const Half* in, float* out, std::size_t n, void* stream) {
  map("launch of the fp16-to-fp32 kernel", reinterpret_cast<const __half*>(in), out, n,
      Fp16ToFp32Op{}, as_stream(stream));
}

double sum_of_squares(const float* x, std::size_t n, void* stream) {
  if (n == 0) return 0.0;
  return transform_reduce(x, n, SquareAsDoubleOp{}, PlusDoubleOp{}, 0.0, as_stream(stream));
}

bool all_finite(const float* x, std::size_t n, void* stream) {
  if (n == 0) return true;
  const std::uint32_t flags = transform_reduce(x, n, NonFiniteBitOp{}, BitOrOp{},
                                               static_cast<std::uint32_t>(0), as_stream(stream));
  return (flags & NonFiniteBitOp::kFlag) == 0;
}

bool scale_and_check_finite(float* x, float alpha, std::size_t n, void* cuda_stream) {
  if (n == 0) return true;
  const cudaStream_t stream = as_stream(cuda_stream);
  StreamOrderedBuffer flags(sizeof(unsigned int), stream);
  unsigned int* flags_on_device = reinterpret_cast<unsigned int*>(flags.data());
  GW_CUDA_CHECK(cudaMemsetAsync(flags_on_device, 0, sizeof(unsigned int), stream));
  map_and_flag_kernel<<<blocks_for(n), kThreadsPerBlock, 0, stream>>>(
      x, n, ScaleOp{alpha}, NonFiniteBitOp{}, flags_on_device);
  GW_CUDA_CHECK_LAUNCH("launch of the scale-and-check kernel");
  unsigned int result = 0;
  GW_CUDA_CHECK(
      cudaMemcpyAsync(&result, flags_on_device, sizeof result, cudaMemcpyDeviceToHost, stream));
  GW_CUDA_CHECK(cudaStreamSynchronize(stream));
  return (result & NonFiniteBitOp::kFlag) == 0;
}

}  // namespace cuda
}  // namespace gw::kernels
