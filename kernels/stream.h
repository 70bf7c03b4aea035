// Where a primitive runs (a Stream), how one stream waits for another (an Event), and owning
// memory on a device (Buffer). Every primitive in kernels/ takes the Stream it runs on.
//
// Note [Streams]
// A Stream is the host or one CUDA stream on one device. On the host a primitive runs to the end
// on the calling thread before it returns. On a CUDA stream it is enqueued and returns at once,
// except a primitive that hands a value back to the host (a count, a norm, a finiteness flag),
// which synchronises that stream, and says so in its header. CUDA streams are created
// non-blocking (cudaStreamNonBlocking): they never wait for, and are never waited on by, CUDA's
// legacy default stream, which no gradwire code uses. Ordering between streams is explicit:
// record an Event on the producer, make the consumer wait on it. Copies of a Stream name the same
// stream (the last copy destroys it), so a Stream can be stored by value.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "kernels/device.h"

namespace gw::kernels {

class Stream {
 public:
  // The host: work runs synchronously on the calling thread.
  static Stream host();
  // A new non-blocking CUDA stream on `device` (-1: the calling thread's current device). Throws
  // std::runtime_error in a build without CUDA, or when the device cannot be used.
  static Stream cuda(int device = -1);

  Device device() const { return impl_ ? Device::kCuda : Device::kHost; }
  bool is_host() const { return impl_ == nullptr; }
  // The CUDA device ordinal; -1 for the host.
  int cuda_device() const;
  // The cudaStream_t, as void* so that host code needs no CUDA header; nullptr for the host.
  void* native() const;
  // Blocks until everything enqueued so far has finished (nothing to wait for on the host).
  void synchronize() const;
  // How many times synchronize() was called on any Stream of this process, the host's included:
  // a test counts a path's waits with it, on any machine (Note [Collectives ordered on a stream]).
  static std::uint64_t synchronize_calls();
  // Makes the stream's device the calling thread's current device (nothing on the host); CUDA
  // calls outside kernels/ that need the right device (NCCL, cudaMalloc) call this first.
  void make_current() const;

  friend bool operator==(const Stream& a, const Stream& b) { return a.impl_ == b.impl_; }
  friend bool operator!=(const Stream& a, const Stream& b) { return !(a == b); }

  struct Impl;  // the CUDA side (kernels/cuda/runtime_cuda.h)
  const Impl* impl() const { return impl_.get(); }

 private:
  explicit Stream(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

// A point in a stream's work. On the host an event is complete when it is recorded, and keeps the
// host clock's time then, so that timelines read host and device phases the same way.
class Event {
 public:
  Event();
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  // Marks the current end of `stream`'s work (re-recording moves the mark).
  void record(const Stream& stream);
  // Makes `stream` wait, on the device, until the recorded work has finished; the host does not
  // block. Nothing to do for a host event, or for one never recorded.
  void make_wait(const Stream& stream) const;
  // Blocks the host until the recorded work has finished.
  void synchronize() const;
  // Whether the recorded work has finished, without blocking (true for a host event, and for one
  // never recorded). For waits that must also watch something else (a communication library's
  // asynchronous errors).
  bool completed() const;
  bool recorded() const { return recorded_; }
  // Whether it was last recorded on a CUDA stream.
  bool on_device() const { return recorded_ && on_device_; }
  // The host clock's time when a host event was recorded. Throws std::logic_error for a device
  // event (its time is the device's: elapsed_ms_since another device event) or one never recorded.
  std::chrono::steady_clock::time_point host_time() const;
  // Milliseconds from `start` to this event; both recorded on the same kind of stream and
  // complete (a device event is waited for first). Throws std::logic_error otherwise.
  double elapsed_ms_since(const Event& start) const;

 private:
  void* native_ = nullptr;  // cudaEvent_t of the device it was recorded on, created on first use
  int native_device_ = -1;
  bool recorded_ = false;
  bool on_device_ = false;
  std::chrono::steady_clock::time_point host_time_{};
};

// Raw memory on a device: host memory (64-byte aligned), CUDA device memory (cudaMalloc on the
// stream's device), or pinned host memory (cudaMallocHost where CUDA is available, for staging
// copies; ordinary host memory otherwise). Uninitialised. Move-only.
enum class MemoryKind { kHost, kCuda, kPinnedHost };

class RawBuffer {
 public:
  RawBuffer() = default;
  // `cuda_device` is used for kCuda only (-1: the current device).
  RawBuffer(std::size_t bytes, MemoryKind kind, int cuda_device = -1);
  ~RawBuffer();
  RawBuffer(RawBuffer&& other) noexcept;
  RawBuffer& operator=(RawBuffer&& other) noexcept;
  RawBuffer(const RawBuffer&) = delete;
  RawBuffer& operator=(const RawBuffer&) = delete;

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  MemoryKind kind() const { return kind_; }

 private:
  void release() noexcept;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  MemoryKind kind_ = MemoryKind::kHost;
  int cuda_device_ = -1;
};

// n elements of T where `stream` works: device memory for a CUDA stream, host memory for the
// host. Uninitialised (fill with kernels::fill_zero if needed). Move-only.
template <class T>
class Buffer {
 public:
  Buffer() = default;
  Buffer(std::size_t n, const Stream& stream)
      : raw_(n * sizeof(T), stream.is_host() ? MemoryKind::kHost : MemoryKind::kCuda,
             stream.cuda_device()),
        size_(n),
        device_(stream.device()) {}
  Buffer(Buffer&& other) noexcept
      : raw_(std::move(other.raw_)), size_(other.size_), device_(other.device_) {
    other.size_ = 0;
  }
  Buffer& operator=(Buffer&& other) noexcept {
    if (this == &other) return *this;
    raw_ = std::move(other.raw_);
    size_ = other.size_;
    device_ = other.device_;
    other.size_ = 0;
    return *this;
  }
  T* data() { return static_cast<T*>(raw_.data()); }
  const T* data() const { return static_cast<const T*>(raw_.data()); }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  Device device() const { return device_; }
  // Grows to at least n elements where `stream` works, discarding the contents when it grows;
  // never shrinks. Returns data().
  T* reserve_discard(std::size_t n, const Stream& stream) {
    if (n > size_ || device_ != stream.device()) *this = Buffer(n, stream);
    return data();
  }

 private:
  RawBuffer raw_;
  std::size_t size_ = 0;
  Device device_ = Device::kHost;
};

// Pinned host memory for n elements of T (ordinary host memory in a build without CUDA).
template <class T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t n) : raw_(n * sizeof(T), MemoryKind::kPinnedHost), size_(n) {}
  PinnedBuffer(PinnedBuffer&& other) noexcept : raw_(std::move(other.raw_)), size_(other.size_) {
    other.size_ = 0;
  }
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept {
    if (this == &other) return *this;
    raw_ = std::move(other.raw_);
    size_ = other.size_;
    other.size_ = 0;
    return *this;
  }
  T* data() { return static_cast<T*>(raw_.data()); }
  std::size_t size() const { return size_; }
  T* reserve_discard(std::size_t n) {
    if (n > size_) *this = PinnedBuffer(n);
    return data();
  }

 private:
  RawBuffer raw_;
  std::size_t size_ = 0;
};

// Copies `bytes` from src to dst, each in host or device memory, in `stream`'s order (a host
// stream: at once, memcpy; both must then be host memory). Asynchronous on a CUDA stream: the
// host memory must stay valid until the stream has reached the copy.
void copy_bytes(void* dst, const void* src, std::size_t bytes, const Stream& stream);
// Sets `bytes` bytes at dst to zero, in `stream`'s order.
void fill_zero(void* dst, std::size_t bytes, const Stream& stream);
// Where p points: kCuda for CUDA device (or managed) memory, kHost for anything else, null
// included. Always kHost in a build without CUDA. Never throws.
Device device_of(const void* p);
// The CUDA device ordinal that p's memory belongs to when device_of(p) is kCuda; -1 otherwise.
// Never throws.
int cuda_device_of(const void* p);

}  // namespace gw::kernels
