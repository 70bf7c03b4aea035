#include "kernels/stream.h"

#include <atomic>
#include <cstring>
#include <new>
#include <stdexcept>

#include "kernels/cuda/runtime_cuda.h"

namespace gw::kernels {

namespace {
constexpr std::size_t kHostAlignment = 64;
std::atomic<std::uint64_t> synchronize_count{0};
}  // namespace

Stream Stream::host() { return Stream(nullptr); }

Stream Stream::cuda(int device) { return Stream(cuda::create_stream(device)); }

int Stream::cuda_device() const { return impl_ ? impl_->device : -1; }

void* Stream::native() const { return impl_ ? impl_->stream : nullptr; }

std::uint64_t Stream::synchronize_calls() {
  return synchronize_count.load(std::memory_order_relaxed);
}

void Stream::synchronize() const {
  synchronize_count.fetch_add(1, std::memory_order_relaxed);
  if (impl_) cuda::stream_synchronize(*impl_);
}

void Stream::make_current() const {
  if (impl_) cuda::set_device(impl_->device);
}

Event::Event() = default;

Event::~Event() {
  if (native_) cuda::event_destroy(native_, native_device_);
}

Event::Event(Event&& other) noexcept
    : native_(other.native_),
      native_device_(other.native_device_),
      recorded_(other.recorded_),
      on_device_(other.on_device_),
      host_time_(other.host_time_) {
  other.native_ = nullptr;
  other.recorded_ = false;
}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    if (native_) cuda::event_destroy(native_, native_device_);
    native_ = other.native_;
    native_device_ = other.native_device_;
    recorded_ = other.recorded_;
    on_device_ = other.on_device_;
    host_time_ = other.host_time_;
    other.native_ = nullptr;
    other.recorded_ = false;
  }
  return *this;
}

void Event::record(const Stream& stream) {
  if (stream.is_host()) {
    host_time_ = std::chrono::steady_clock::now();
    on_device_ = false;
  } else {
    if (native_ && native_device_ != stream.cuda_device()) {
      cuda::event_destroy(native_, native_device_);
      native_ = nullptr;
    }
    if (!native_) {
      native_ = cuda::event_create(stream.cuda_device());
      native_device_ = stream.cuda_device();
    }
    cuda::event_record(native_, *stream.impl());
    on_device_ = true;
  }
  recorded_ = true;
}

void Event::make_wait(const Stream& stream) const {
  if (!recorded_ || !on_device_ || stream.is_host()) {
    // A host stream waiting on device work must block: the host is its only "stream".
    if (recorded_ && on_device_) synchronize();
    return;
  }
  cuda::stream_wait_event(*stream.impl(), native_);
}

void Event::synchronize() const {
  if (recorded_ && on_device_) cuda::event_synchronize(native_);
}

bool Event::completed() const { return !(recorded_ && on_device_) || cuda::event_query(native_); }

std::chrono::steady_clock::time_point Event::host_time() const {
  if (!recorded_ || on_device_) {
    throw std::logic_error("Event::host_time: the event must be recorded on the host");
  }
  return host_time_;
}

double Event::elapsed_ms_since(const Event& start) const {
  if (!recorded_ || !start.recorded_ || on_device_ != start.on_device_) {
    throw std::logic_error(
        "Event::elapsed_ms_since: both events must be recorded, on the same kind of stream");
  }
  if (!on_device_) {
    return std::chrono::duration<double, std::milli>(host_time_ - start.host_time_).count();
  }
  synchronize();
  return cuda::event_elapsed_ms(start.native_, native_);
}

namespace {

// Relaxed atomics suffice: the figures are statistics, read between steps.
std::atomic<std::size_t> cuda_held{0};
std::atomic<std::size_t> cuda_peak{0};

void count_cuda_alloc(std::size_t bytes) {
  const std::size_t now = cuda_held.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  std::size_t peak = cuda_peak.load(std::memory_order_relaxed);
  while (now > peak && !cuda_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

}  // namespace

CudaMemoryUse cuda_memory_use() {
  return CudaMemoryUse{cuda_held.load(std::memory_order_relaxed),
                       cuda_peak.load(std::memory_order_relaxed)};
}

void reset_cuda_memory_peak() {
  cuda_peak.store(cuda_held.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

RawBuffer::RawBuffer(std::size_t bytes, MemoryKind kind, int cuda_device)
    : bytes_(bytes), kind_(kind), cuda_device_(cuda_device) {
  if (bytes == 0) return;
  switch (kind) {
    case MemoryKind::kHost:
      data_ = ::operator new (bytes, std::align_val_t{kHostAlignment});
      break;
    case MemoryKind::kCuda:
      data_ = cuda::malloc_device(bytes, cuda_device);
      count_cuda_alloc(bytes);
      break;
    case MemoryKind::kPinnedHost:
      data_ = cuda_device_available() ? cuda::malloc_pinned(bytes)
                                      : ::operator new (bytes, std::align_val_t{kHostAlignment});
      if (!cuda_device_available()) kind_ = MemoryKind::kHost;
      break;
  }
}

RawBuffer::~RawBuffer() { release(); }

RawBuffer::RawBuffer(RawBuffer&& other) noexcept
    : data_(other.data_),
      bytes_(other.bytes_),
      kind_(other.kind_),
      cuda_device_(other.cuda_device_) {
  other.data_ = nullptr;
  other.bytes_ = 0;
}

RawBuffer& RawBuffer::operator=(RawBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = other.data_;
    bytes_ = other.bytes_;
    kind_ = other.kind_;
    cuda_device_ = other.cuda_device_;
    other.data_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

void RawBuffer::release() noexcept {
  if (!data_) return;
  switch (kind_) {
    case MemoryKind::kHost:
      ::operator delete (data_, std::align_val_t{kHostAlignment});
      break;
    case MemoryKind::kCuda:
      cuda::free_device(data_, cuda_device_);
      cuda_held.fetch_sub(bytes_, std::memory_order_relaxed);
      break;
    case MemoryKind::kPinnedHost:
      cuda::free_pinned(data_);
      break;
  }
  data_ = nullptr;
}

void copy_bytes(void* dst, const void* src, std::size_t bytes, const Stream& stream) {
  if (bytes == 0) return;
  if (stream.is_host()) {
    std::memcpy(dst, src, bytes);
  } else {
    cuda::memcpy_async(dst, src, bytes, *stream.impl());
  }
}

void fill_zero(void* dst, std::size_t bytes, const Stream& stream) {
  if (bytes == 0) return;
  if (stream.is_host()) {
    std::memset(dst, 0, bytes);
  } else {
    cuda::memset_async(dst, bytes, *stream.impl());
  }
}

Device device_of(const void* p) { return cuda::pointer_device(p); }

int cuda_device_of(const void* p) { return cuda::pointer_device_ordinal(p); }

}  // namespace gw::kernels
