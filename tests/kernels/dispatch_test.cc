// The Stream-taking API itself: Device names, the host stream, buffers and events on it, and what
// asking for CUDA does in a build without CUDA.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "gradwire/config.h"
#include "kernels/device.h"
#include "kernels/elementwise.h"
#include "kernels/stream.h"

namespace gw::kernels {
namespace {

TEST(Device, ToString) {
  EXPECT_STREQ(to_string(Device::kHost), "host");
  EXPECT_STREQ(to_string(Device::kCuda), "cuda");
  EXPECT_STREQ(to_string(static_cast<Device>(42)), "invalid Device");
}

TEST(Stream, HostStreamRunsAtOnce) {
  const Stream host = Stream::host();
  EXPECT_TRUE(host.is_host());
  EXPECT_EQ(host.device(), Device::kHost);
  EXPECT_EQ(host.cuda_device(), -1);
  EXPECT_EQ(host.native(), nullptr);
  EXPECT_EQ(host, Stream::host());
  host.synchronize();
  host.make_current();
  std::vector<float> x(4, 1.0f);
  scale(x.data(), 2.0f, x.size(), host);
  EXPECT_EQ(x[3], 2.0f);  // done when scale returned
}

TEST(Stream, HostBuffersCopiesAndEvents) {
  const Stream host = Stream::host();
  Buffer<float> b(1000, host);
  EXPECT_EQ(b.size(), 1000u);
  EXPECT_EQ(b.device(), Device::kHost);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % 64, 0u);
  std::vector<float> src(1000);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i);
  copy_bytes(b.data(), src.data(), src.size() * sizeof(float), host);
  EXPECT_EQ(b.data()[999], 999.0f);
  fill_zero(b.data(), 10 * sizeof(float), host);
  EXPECT_EQ(b.data()[9], 0.0f);
  EXPECT_EQ(b.data()[10], 10.0f);
  float* before = b.data();
  EXPECT_EQ(b.reserve_discard(10, host), before);  // never shrinks
  EXPECT_EQ(b.reserve_discard(2000, host) != nullptr, true);
  EXPECT_EQ(b.size(), 2000u);
  Buffer<float> moved = std::move(b);
  EXPECT_EQ(moved.size(), 2000u);
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(device_of(moved.data()), Device::kHost);

  // Host memory is not device memory: the device figures do not move.
  EXPECT_EQ(cuda_memory_use().held, 0u);
  EXPECT_EQ(cuda_memory_use().peak, 0u);

  Event start, end;
  EXPECT_FALSE(start.recorded());
  EXPECT_THROW(end.elapsed_ms_since(start), std::logic_error);
  EXPECT_THROW(start.host_time(), std::logic_error);
  const auto before_start = std::chrono::steady_clock::now();
  start.record(host);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  end.record(host);
  const auto after_end = std::chrono::steady_clock::now();
  EXPECT_TRUE(end.recorded());
  EXPECT_FALSE(end.on_device());
  end.make_wait(host);
  end.synchronize();
  // A host event keeps the host clock's time when it was recorded (the timeline maps device
  // events onto that clock and takes host events as they are).
  EXPECT_LE(before_start, start.host_time());
  EXPECT_LE(end.host_time(), after_end);
  const double ms = end.elapsed_ms_since(start);
  EXPECT_GE(ms, 2.0);
  const std::chrono::duration<double, std::milli> between = end.host_time() - start.host_time();
  EXPECT_DOUBLE_EQ(ms, between.count());
}

#if !GRADWIRE_HAVE_CUDA
TEST(NoCudaBuild, CudaIsNotAvailable) { EXPECT_FALSE(cuda_device_available()); }

// Asking for a CUDA stream or CUDA memory in a build without CUDA is a clear error naming the
// build and what was asked for, never a crash; no pointer is taken for device memory.
TEST(NoCudaBuild, CudaStreamsAndMemoryThrowInsteadOfCrashing) {
  try {
    Stream::cuda();
    ADD_FAILURE() << "Stream::cuda() did not throw";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "gradwire was built without CUDA: Stream::cuda needs a CUDA device and is "
              "unavailable");
  }
  EXPECT_THROW(RawBuffer(16, MemoryKind::kCuda), std::runtime_error);
  PinnedBuffer<float> pinned(4);  // ordinary host memory here
  pinned.data()[3] = 1.0f;
  std::vector<float> x(4, 1.0f);
  EXPECT_EQ(device_of(x.data()), Device::kHost);
  EXPECT_EQ(device_of(nullptr), Device::kHost);
}
#endif

}  // namespace
}  // namespace gw::kernels
