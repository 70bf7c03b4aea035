// The CUDA runtime calls behind kernels/stream.h (internal): plain C++ declarations, defined in
// kernels/cuda/runtime.cu, and in a build without CUDA by kernels/cuda/no_cuda.cc, where every
// one of them throws std::runtime_error (device_of and the destructors excepted: they never throw).
#pragma once

#include <cstddef>

#include "kernels/device.h"
#include "kernels/stream.h"

namespace gw::kernels {

struct Stream::Impl {
  void* stream = nullptr;  // cudaStream_t
  int device = -1;
  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl();  // cudaStreamDestroy
};

namespace cuda {

std::shared_ptr<Stream::Impl> create_stream(int device);
void stream_synchronize(const Stream::Impl& stream);
void set_device(int device);

void* event_create(int device);
void event_destroy(void* event, int device) noexcept;
void event_record(void* event, const Stream::Impl& stream);
void stream_wait_event(const Stream::Impl& stream, void* event);
void event_synchronize(void* event);
bool event_query(void* event);  // complete? (cudaErrorNotReady: false)
float event_elapsed_ms(void* start, void* end);

void* malloc_device(std::size_t bytes, int device);
void free_device(void* p, int device) noexcept;
void* malloc_pinned(std::size_t bytes);
void free_pinned(void* p) noexcept;
void memcpy_async(void* dst, const void* src, std::size_t bytes, const Stream::Impl& stream);
void memset_async(void* dst, std::size_t bytes, const Stream::Impl& stream);
Device pointer_device(const void* p) noexcept;
int pointer_device_ordinal(const void* p) noexcept;  // -1 unless device (or managed) memory

}  // namespace cuda
}  // namespace gw::kernels
