// The CUDA runtime behind kernels/stream.h: streams, events and memory. Thin on purpose: each
// function is one checked runtime call (Note [Streams]).
#include <cuda_runtime.h>

#include <cstdint>
#include <limits>
#include <mutex>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/runtime_cuda.h"
#include "kernels/thrust/cuda_policy.h"

namespace gw::kernels {

Stream::Impl::~Impl() {
  if (stream) cudaStreamDestroy(static_cast<cudaStream_t>(stream));  // no throw in a destructor
}

namespace cuda {

namespace {
cudaStream_t native(const Stream::Impl& s) { return static_cast<cudaStream_t>(s.stream); }

int resolve(int device) {
  if (device >= 0) return device;
  int current = 0;
  GW_CUDA_CHECK(cudaGetDevice(&current));
  return current;
}

// Runs with `device` current and restores the caller's device afterwards.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    GW_CUDA_CHECK(cudaGetDevice(&previous_));
    if (device != previous_) GW_CUDA_CHECK(cudaSetDevice(device));
    switched_ = device != previous_;
  }
  ~DeviceScope() {
    if (switched_) cudaSetDevice(previous_);
  }

 private:
  int previous_ = 0;
  bool switched_ = false;
};
}  // namespace

std::shared_ptr<Stream::Impl> create_stream(int device) {
  if (!cuda_device_available()) {
    throw std::runtime_error("a CUDA stream was asked for, but no CUDA device is usable here");
  }
  auto impl = std::make_shared<Stream::Impl>();
  impl->device = resolve(device);
  DeviceScope scope(impl->device);
  cudaStream_t s = nullptr;
  GW_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  impl->stream = s;
  return impl;
}

void stream_synchronize(const Stream::Impl& stream) {
  GW_CUDA_CHECK(cudaStreamSynchronize(native(stream)));
}

void set_device(int device) { GW_CUDA_CHECK(cudaSetDevice(device)); }

void* event_create(int device) {
  DeviceScope scope(resolve(device));
  cudaEvent_t e = nullptr;
  GW_CUDA_CHECK(cudaEventCreate(&e));  // with timing: the timeline reads device phases from it
  return e;
}

void event_destroy(void* event, int) noexcept { cudaEventDestroy(static_cast<cudaEvent_t>(event)); }

void event_record(void* event, const Stream::Impl& stream) {
  GW_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event), native(stream)));
}

void stream_wait_event(const Stream::Impl& stream, void* event) {
  GW_CUDA_CHECK(cudaStreamWaitEvent(native(stream), static_cast<cudaEvent_t>(event), 0));
}

void event_synchronize(void* event) {
  GW_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event)));
}

bool event_query(void* event) {
  const cudaError_t status = cudaEventQuery(static_cast<cudaEvent_t>(event));
  if (status == cudaErrorNotReady) return false;
  GW_CUDA_CHECK(status);
  return true;
}

float event_elapsed_ms(void* start, void* end) {
  float ms = 0.0f;
  GW_CUDA_CHECK(
      cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start), static_cast<cudaEvent_t>(end)));
  return ms;
}

void* malloc_device(std::size_t bytes, int device) {
  DeviceScope scope(resolve(device));
  void* p = nullptr;
  GW_CUDA_CHECK(cudaMalloc(&p, bytes));
  return p;
}

void free_device(void* p, int) noexcept { cudaFree(p); }

void* malloc_pinned(std::size_t bytes) {
  void* p = nullptr;
  GW_CUDA_CHECK(cudaMallocHost(&p, bytes));
  return p;
}

void free_pinned(void* p) noexcept { cudaFreeHost(p); }

void memcpy_async(void* dst, const void* src, std::size_t bytes, const Stream::Impl& stream) {
  GW_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, native(stream)));
}

void memset_async(void* dst, std::size_t bytes, const Stream::Impl& stream) {
  GW_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, native(stream)));
}

Device pointer_device(const void* p) noexcept {
  if (p == nullptr) return Device::kHost;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    cudaGetLastError();  // no driver or an unknown pointer: host memory as far as we can tell
    return Device::kHost;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged
             ? Device::kCuda
             : Device::kHost;
}

int pointer_device_ordinal(const void* p) noexcept {
  if (pointer_device(p) != Device::kCuda) return -1;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return attributes.device;
}

namespace {

// Whether the current device's default memory pool serves Thrust's temporaries
// (Note [Thrust's temporaries on the stream]); asked of CUDA once per device.
bool memory_pool_ready() {
  int device = 0;
  GW_CUDA_CHECK(cudaGetDevice(&device));
  static std::mutex mutex;
  static std::vector<signed char> ready;  // per device: -1 not asked yet, 0 no, 1 yes
  std::lock_guard<std::mutex> lock(mutex);
  if (static_cast<std::size_t>(device) >= ready.size()) ready.resize(device + 1, -1);
  if (ready[device] < 0) {
    int supported = 0;
    GW_CUDA_CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device));
    if (supported) {
      cudaMemPool_t pool = nullptr;
      GW_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
      std::uint64_t keep = std::numeric_limits<std::uint64_t>::max();
      GW_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
    }
    ready[device] = supported ? 1 : 0;
  }
  return ready[device] == 1;
}

}  // namespace

StreamTemporaries::StreamTemporaries(cudaStream_t stream)
    : stream_(stream), pooled_(memory_pool_ready()) {}

char* StreamTemporaries::allocate(std::ptrdiff_t bytes) {
  void* p = nullptr;
  if (pooled_) {
    GW_CUDA_CHECK(cudaMallocAsync(&p, static_cast<std::size_t>(bytes), stream_));
  } else {
    GW_CUDA_CHECK(cudaMalloc(&p, static_cast<std::size_t>(bytes)));
  }
  return static_cast<char*>(p);
}

void StreamTemporaries::deallocate(char* p, std::size_t) noexcept {
  if (pooled_) {
    cudaFreeAsync(p, stream_);
  } else {
    cudaFree(p);
  }
}

}  // namespace cuda

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // no driver or no device: none usable, and nothing left for a later check
    return 0;
  }
  return count;
}

std::string cuda_device_bus_id(int device) {
  char id[32] = {};
  GW_CUDA_CHECK(cudaDeviceGetPCIBusId(id, static_cast<int>(sizeof id), device));
  return id;
}

std::string cuda_device_name(int device) {
  cudaDeviceProp prop{};
  GW_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return prop.name;
}

}  // namespace gw::kernels
