// The primitives on Device::kCuda against the CPU implementation, which kernels_cpu_test checks
// against scalar references. Built whenever nvcc is found; skips when no CUDA device is usable.
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
#include "tests/kernels/kernels_test_util.h"

namespace gw::kernels {
namespace {

using test_util::is_fp16_nan;
using test_util::kTestSizes;
using test_util::random_floats;
using test_util::same_bits;

constexpr const char* kNoDevice = "no CUDA device: the CUDA kernels are built but cannot run here";

// A device copy of a host vector, freed on scope exit.
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(const std::vector<T>& host) : size_(host.size()) {
    if (size_ == 0) return;
    GW_CUDA_CHECK(cudaMalloc(&data_, size_ * sizeof(T)));
    GW_CUDA_CHECK(cudaMemcpy(data_, host.data(), size_ * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~DeviceArray() { cudaFree(data_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  T* get() { return static_cast<T*>(data_); }
  std::vector<T> to_host() const {
    std::vector<T> host(size_);
    if (size_ != 0) {
      GW_CUDA_CHECK(cudaMemcpy(host.data(), data_, size_ * sizeof(T), cudaMemcpyDeviceToHost));
    }
    return host;
  }
  void set(std::size_t i, T value) {
    GW_CUDA_CHECK(cudaMemcpy(get() + i, &value, sizeof(T), cudaMemcpyHostToDevice));
  }

 private:
  void* data_ = nullptr;
  std::size_t size_;
};

class CudaElementwiseTest : public ::testing::TestWithParam<std::size_t> {
 protected:
  void SetUp() override {
    if (!cuda_device_available()) GTEST_SKIP() << kNoDevice;
  }
};

TEST_P(CudaElementwiseTest, ScaleMatchesCpu) {
  const std::size_t n = GetParam();
  std::vector<float> x = random_floats(n, 11);
  DeviceArray<float> d_x(x);
  scale(d_x.get(), -0.3f, n, Device::kCuda);
  scale(x.data(), -0.3f, n, Device::kHost);
  EXPECT_TRUE(same_bits(x, d_x.to_host()));
}

TEST_P(CudaElementwiseTest, AxpyMatchesCpuBitForBit) {
  const std::size_t n = GetParam();
  const std::vector<float> x = random_floats(n, 21);
  std::vector<float> y = random_floats(n, 22);
  DeviceArray<float> d_x(x);
  DeviceArray<float> d_y(y);
  axpy(0.7f, d_x.get(), d_y.get(), n, Device::kCuda);
  axpy(0.7f, x.data(), y.data(), n, Device::kHost);
  EXPECT_TRUE(same_bits(y, d_y.to_host()));
}

TEST_P(CudaElementwiseTest, AxpyInPlaceWhenXIsY) {
  const std::size_t n = GetParam();
  std::vector<float> y = random_floats(n, 23);
  DeviceArray<float> d_y(y);
  axpy(0.25f, d_y.get(), d_y.get(), n, Device::kCuda);
  axpy(0.25f, y.data(), y.data(), n, Device::kHost);
  EXPECT_TRUE(same_bits(y, d_y.to_host()));
}

TEST_P(CudaElementwiseTest, Fp32ToFp16MatchesCpu) {
  const std::size_t n = GetParam();
  const std::vector<float> in = test_util::random_cast_inputs(n, 51);
  std::vector<Half> expected(n);
  cast_fp32_to_fp16(in.data(), expected.data(), n, Device::kHost);
  DeviceArray<float> d_in(in);
  DeviceArray<Half> d_out(std::vector<Half>(n, Half{0x5555}));
  cast_fp32_to_fp16(d_in.get(), d_out.get(), n, Device::kCuda);
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
  cast_fp16_to_fp32(in.data(), expected.data(), n, Device::kHost);
  DeviceArray<Half> d_in(in);
  DeviceArray<float> d_out(std::vector<float>(n, -1.0f));
  cast_fp16_to_fp32(d_in.get(), d_out.get(), n, Device::kCuda);
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
  DeviceArray<float> d_x(x);
  const double expected = sum_of_squares(x.data(), n, Device::kHost);
  const double actual = sum_of_squares(d_x.get(), n, Device::kCuda);
  // Both sum exact double squares, in different orders.
  EXPECT_NEAR(actual, expected, 1e-13 * expected);
}

TEST_P(CudaElementwiseTest, AllFiniteFindsOneInfOrNanAnywhere) {
  const std::size_t n = GetParam();
  std::vector<float> x = random_floats(n, 42);
  DeviceArray<float> d_x(x);
  EXPECT_TRUE(all_finite(d_x.get(), n, Device::kCuda));
  if (n == 0) return;
  const float bad_values[] = {
      std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
      std::numeric_limits<float>::quiet_NaN(), test_util::bits_float(0x7f800001u)};
  for (const std::size_t position : {std::size_t{0}, n / 2, n - 1}) {
    for (const float bad : bad_values) {
      d_x.set(position, bad);
      EXPECT_FALSE(all_finite(d_x.get(), n, Device::kCuda))
          << "value " << bad << " at " << position << " of " << n;
      d_x.set(position, x[position]);
    }
  }
  EXPECT_TRUE(all_finite(d_x.get(), n, Device::kCuda));
}

TEST_P(CudaElementwiseTest, ScaleAndCheckFiniteMatchesTheCpu) {
  const std::size_t n = GetParam();
  std::vector<float> x = random_floats(n, 44);
  DeviceArray<float> d_x(x);
  EXPECT_TRUE(scale_and_check_finite(d_x.get(), 0.25f, n, Device::kCuda));
  std::vector<float> expected = x;
  EXPECT_TRUE(scale_and_check_finite(expected.data(), 0.25f, n, Device::kHost));
  EXPECT_TRUE(same_bits(expected, d_x.to_host()));
  if (n == 0) return;
  x[n / 2] = std::numeric_limits<float>::infinity();
  DeviceArray<float> d_bad(x);
  EXPECT_FALSE(scale_and_check_finite(d_bad.get(), 0.25f, n, Device::kCuda));
}

INSTANTIATE_TEST_SUITE_P(Sizes, CudaElementwiseTest, ::testing::ValuesIn(kTestSizes),
                         test_util::size_name);

TEST(CudaElementwise, Fp16RoundTripKeepsAllBitPatterns) {
  if (!cuda_device_available()) GTEST_SKIP() << kNoDevice;
  const std::vector<Half> all = test_util::all_fp16_bit_patterns();
  DeviceArray<Half> d_all(all);
  DeviceArray<float> d_wide(std::vector<float>(all.size()));
  DeviceArray<Half> d_back(std::vector<Half>(all.size()));
  cast_fp16_to_fp32(d_all.get(), d_wide.get(), all.size(), Device::kCuda);
  cast_fp32_to_fp16(d_wide.get(), d_back.get(), all.size(), Device::kCuda);
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
  scale(nullptr, 2.0f, 0, Device::kCuda);
  axpy(2.0f, nullptr, nullptr, 0, Device::kCuda);
  cast_fp32_to_fp16(nullptr, nullptr, 0, Device::kCuda);
  cast_fp16_to_fp32(nullptr, nullptr, 0, Device::kCuda);
  EXPECT_EQ(sum_of_squares(nullptr, 0, Device::kCuda), 0.0);
  EXPECT_TRUE(all_finite(nullptr, 0, Device::kCuda));
}

// In a CUDA build on a machine without a usable device, kCuda work fails as a checked error.
TEST(CudaElementwise, WithoutDeviceCallsThrowInsteadOfCrashing) {
  if (cuda_device_available()) GTEST_SKIP() << "a CUDA device is present";
  std::vector<float> x(4, 1.0f);
  EXPECT_THROW(scale(x.data(), 2.0f, x.size(), Device::kCuda), std::runtime_error);
  EXPECT_THROW(sum_of_squares(x.data(), x.size(), Device::kCuda), std::runtime_error);
  EXPECT_THROW(all_finite(x.data(), x.size(), Device::kCuda), std::runtime_error);
}

}  // namespace
}  // namespace gw::kernels
