// The primitives on a CUDA stream against the CPU implementation, which kernels_cpu_test checks
// against scalar references; and Stream, Event and Buffer on a device. Built whenever nvcc is
// found; skips when no CUDA device is usable.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/elementwise.h"
#include "kernels/stream.h"
#include "tests/kernels/kernels_test_util.h"

namespace gw::kernels {
namespace {

using test_util::is_fp16_nan;
using test_util::kTestSizes;
using test_util::random_floats;
using test_util::same_bits;

constexpr const char* kNoDevice = "no CUDA device: the CUDA kernels are built but cannot run here";

// A device copy of a host vector on the test's stream (Buffer, copy_bytes), read back after the
// stream has finished: nothing here touches CUDA's legacy default stream.
template <typename T>
class DeviceArray {
 public:
  DeviceArray(const std::vector<T>& host, const Stream& stream)
      : stream_(stream), buffer_(host.size(), stream) {
    copy_bytes(buffer_.data(), host.data(), host.size() * sizeof(T), stream_);
    stream_.synchronize();
  }

  T* get() { return buffer_.data(); }
  std::vector<T> to_host() const {
    std::vector<T> host(buffer_.size());
    stream_.synchronize();
    copy_bytes(host.data(), buffer_.data(), host.size() * sizeof(T), stream_);
    stream_.synchronize();
    return host;
  }
  void set(std::size_t i, T value) {
    copy_bytes(buffer_.data() + i, &value, sizeof(T), stream_);
    stream_.synchronize();
  }

 private:
  Stream stream_;
  Buffer<T> buffer_;
};

class CudaElementwiseTest : public ::testing::TestWithParam<std::size_t> {
 protected:
  void SetUp() override {
    if (!cuda_device_available()) GTEST_SKIP() << kNoDevice;
    stream_ = Stream::cuda();
  }
  Stream stream_ = Stream::host();
};

TEST_P(CudaElementwiseTest, ScaleMatchesCpu) {
  const std::size_t n = GetParam();
  std::vector<float> x = random_floats(n, 11);
  DeviceArray<float> d_x(x, stream_);
  scale(d_x.get(), -0.3f, n, stream_);
  scale(x.data(), -0.3f, n, Stream::host());
  EXPECT_TRUE(same_bits(x, d_x.to_host()));
}

TEST_P(CudaElementwiseTest, AxpyMatchesCpuBitForBit) {
  const std::size_t n = GetParam();
  const std::vector<float> x = random_floats(n, 21);
  std::vector<float> y = random_floats(n, 22);
  DeviceArray<float> d_x(x, stream_);
  DeviceArray<float> d_y(y, stream_);
  axpy(0.7f, d_x.get(), d_y.get(), n, stream_);
  axpy(0.7f, x.data(), y.data(), n, Stream::host());
  EXPECT_TRUE(same_bits(y, d_y.to_host()));
}

TEST_P(CudaElementwiseTest, AxpyInPlaceWhenXIsY) {
  const std::size_t n = GetParam();
  std::vector<float> y = random_floats(n, 23);
  DeviceArray<float> d_y(y, stream_);
  axpy(0.25f, d_y.get(), d_y.get(), n, stream_);
  axpy(0.25f, y.data(), y.data(), n, Stream::host());
  EXPECT_TRUE(same_bits(y, d_y.to_host()));
}

TEST_P(CudaElementwiseTest, Fp32ToFp16MatchesCpu) {
  const std::size_t n = GetParam();
  const std::vector<float> in = test_util::random_cast_inputs(n, 51);
  std::vector<Half> expected(n);
  cast_fp32_to_fp16(in.data(), expected.data(), n, Stream::host());
  DeviceArray<float> d_in(in, stream_);
  DeviceArray<Half> d_out(std::vector<Half>(n, Half{0x5555}), stream_);
  cast_fp32_to_fp16(d_in.get(), d_out.get(), n, stream_);
  const std::vector<Half> out = d_out.to_host();
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const bool ok =
        is_fp16_nan(expected[i].bits) ? is_fp16_nan(out[i].bits) : out[i].bits == expected[i].bits;
    if (!ok && ++mismatches <= 5) {
      ADD_FAILURE() << "[" << i << "] " << std::hexfloat << in[i] << ": cpu 0x" << std::hex
                    << expected[i].bits << " cuda 0x" << out[i].bits;
    }
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST_P(CudaElementwiseTest, Fp16ToFp32MatchesCpu) {
  const std::size_t n = GetParam();
  std::vector<Half> in(n);
  for (std::size_t i = 0; i < n; ++i) in[i].bits = static_cast<std::uint16_t>(i * 40503u);
  std::vector<float> expected(n);
  cast_fp16_to_fp32(in.data(), expected.data(), n, Stream::host());
  DeviceArray<Half> d_in(in, stream_);
  DeviceArray<float> d_out(std::vector<float>(n, -1.0f), stream_);
  cast_fp16_to_fp32(d_in.get(), d_out.get(), n, stream_);
  std::vector<float> out = d_out.to_host();
  for (std::size_t i = 0; i < n; ++i) {
    // NaN payloads may differ between the two devices; NaN-ness may not.
    if (is_fp16_nan(in[i].bits)) {
      EXPECT_TRUE(std::isnan(out[i])) << i;
      out[i] = expected[i];
    }
  }
  EXPECT_TRUE(same_bits(expected, out));
}

TEST_P(CudaElementwiseTest, SumOfSquaresMatchesCpu) {
  const std::size_t n = GetParam();
  const std::vector<float> x = random_floats(n, 31);
  DeviceArray<float> d_x(x, stream_);
  const double expected = sum_of_squares(x.data(), n, Stream::host());
  const double actual = sum_of_squares(d_x.get(), n, stream_);
  // Both sum exact double squares, in different orders.
  EXPECT_NEAR(actual, expected, 1e-13 * expected);
}

TEST_P(CudaElementwiseTest, AllFiniteFindsOneInfOrNanAnywhere) {
  const std::size_t n = GetParam();
  std::vector<float> x = random_floats(n, 42);
  DeviceArray<float> d_x(x, stream_);
  EXPECT_TRUE(all_finite(d_x.get(), n, stream_));
  if (n == 0) return;
  const float bad_values[] = {
      std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
      std::numeric_limits<float>::quiet_NaN(), test_util::bits_float(0x7f800001u)};
  for (const std::size_t position : {std::size_t{0}, n / 2, n - 1}) {
    for (const float bad : bad_values) {
      d_x.set(position, bad);
      EXPECT_FALSE(all_finite(d_x.get(), n, stream_))
          << "value " << bad << " at " << position << " of " << n;
      d_x.set(position, x[position]);
    }
  }
  EXPECT_TRUE(all_finite(d_x.get(), n, stream_));
}

TEST_P(CudaElementwiseTest, ScaleAndCheckFiniteMatchesTheCpu) {
  const std::size_t n = GetParam();
  std::vector<float> x = random_floats(n, 44);
  DeviceArray<float> d_x(x, stream_);
  EXPECT_TRUE(scale_and_check_finite(d_x.get(), 0.25f, n, stream_));
  std::vector<float> expected = x;
  EXPECT_TRUE(scale_and_check_finite(expected.data(), 0.25f, n, Stream::host()));
  EXPECT_TRUE(same_bits(expected, d_x.to_host()));
  if (n == 0) return;
  x[n / 2] = std::numeric_limits<float>::infinity();
  DeviceArray<float> d_bad(x, stream_);
  EXPECT_FALSE(scale_and_check_finite(d_bad.get(), 0.25f, n, stream_));
}

INSTANTIATE_TEST_SUITE_P(Sizes, CudaElementwiseTest, ::testing::ValuesIn(kTestSizes),
                         test_util::size_name);

TEST(CudaElementwise, Fp16RoundTripKeepsAllBitPatterns) {
  if (!cuda_device_available()) GTEST_SKIP() << kNoDevice;
  const Stream stream = Stream::cuda();
  const std::vector<Half> all = test_util::all_fp16_bit_patterns();
  DeviceArray<Half> d_all(all, stream);
  DeviceArray<float> d_wide(std::vector<float>(all.size()), stream);
  DeviceArray<Half> d_back(std::vector<Half>(all.size()), stream);
  cast_fp16_to_fp32(d_all.get(), d_wide.get(), all.size(), stream);
  cast_fp32_to_fp16(d_wide.get(), d_back.get(), all.size(), stream);
  const std::vector<Half> back = d_back.to_host();
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (is_fp16_nan(all[i].bits)) {
      EXPECT_TRUE(is_fp16_nan(back[i].bits)) << std::hex << all[i].bits;
    } else {
      EXPECT_EQ(back[i].bits, all[i].bits);
    }
  }
}

TEST(CudaElementwise, EmptyBuffersMayBeNull) {
  if (!cuda_device_available()) GTEST_SKIP() << kNoDevice;
  const Stream stream = Stream::cuda();
  scale(nullptr, 2.0f, 0, stream);
  axpy(2.0f, nullptr, nullptr, 0, stream);
  cast_fp32_to_fp16(nullptr, nullptr, 0, stream);
  cast_fp16_to_fp32(nullptr, nullptr, 0, stream);
  EXPECT_EQ(sum_of_squares(nullptr, 0, stream), 0.0);
  EXPECT_TRUE(all_finite(nullptr, 0, stream));
}

// In a CUDA build on a machine without a usable device, asking for CUDA work fails as a checked
// error, and nothing claims to be device memory.
// The device memory figures the trainer reports: every Buffer on a CUDA stream counted while it
// lives, the peak kept after it is freed.
TEST(CudaMemory, BuffersAreCountedWhileTheyLive) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  const Stream stream = Stream::cuda();
  EXPECT_FALSE(cuda_device_name(stream.cuda_device()).empty());
  reset_cuda_memory_peak();
  const CudaMemoryUse before = cuda_memory_use();
  EXPECT_EQ(before.peak, before.held);
  {
    Buffer<float> b(std::size_t{1} << 20, stream);
    const CudaMemoryUse during = cuda_memory_use();
    EXPECT_EQ(during.held, before.held + (std::size_t{4} << 20));
    EXPECT_EQ(during.peak, during.held);
  }
  const CudaMemoryUse after = cuda_memory_use();
  EXPECT_EQ(after.held, before.held);
  EXPECT_EQ(after.peak, before.held + (std::size_t{4} << 20));
}

TEST(CudaElementwise, WithoutDeviceCallsThrowInsteadOfCrashing) {
  if (cuda_device_available()) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_THROW(Stream::cuda(), std::runtime_error);
  EXPECT_THROW(Buffer<float>(4, Stream::cuda()), std::runtime_error);
  std::vector<float> x(4, 1.0f);
  EXPECT_EQ(device_of(x.data()), Device::kHost);
  PinnedBuffer<float> pinned(4);  // falls back to ordinary host memory
  EXPECT_EQ(device_of(pinned.data()), Device::kHost);
}

// Streams and events on a device: work on a second stream ordered after the first by an event,
// and event timing.
TEST(CudaStream, EventOrdersTwoStreams) {
  if (!cuda_device_available()) GTEST_SKIP() << kNoDevice;
  const Stream producer = Stream::cuda();
  const Stream consumer = Stream::cuda();
  ASSERT_NE(producer, consumer);
  ASSERT_NE(producer.native(), nullptr);
  const std::size_t n = std::size_t{1} << 22;
  std::vector<float> ones(n, 1.0f);
  DeviceArray<float> x(ones, producer);
  Event start, produced;
  start.record(producer);
  for (int i = 0; i < 8; ++i) scale(x.get(), 2.0f, n, producer);  // x = 256
  produced.record(producer);
  produced.make_wait(consumer);
  axpy(1.0f, x.get(), x.get(), n, consumer);  // x = 512, only after the producer's work
  consumer.synchronize();
  const std::vector<float> back = x.to_host();
  EXPECT_EQ(back.front(), 512.0f);
  EXPECT_EQ(back.back(), 512.0f);
  EXPECT_GE(produced.elapsed_ms_since(start), 0.0);
  EXPECT_EQ(device_of(x.get()), Device::kCuda);
  EXPECT_EQ(device_of(ones.data()), Device::kHost);
}

}  // namespace
}  // namespace gw::kernels
