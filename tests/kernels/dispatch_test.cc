// The Device-taking API itself: names, rejection of invalid Device values, and what kCuda does in
// a build without CUDA.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "gradwire/config.h"
#include "kernels/device.h"
#include "kernels/elementwise.h"

namespace gw::kernels {
namespace {

TEST(Device, ToString) {
  EXPECT_STREQ(to_string(Device::kHost), "host");
  EXPECT_STREQ(to_string(Device::kCuda), "cuda");
  EXPECT_STREQ(to_string(static_cast<Device>(42)), "invalid Device");
}

TEST(Dispatch, InvalidDeviceIsRejected) {
  const auto bad = static_cast<Device>(42);
  std::vector<float> x(4, 1.0f);
  std::vector<Half> h(4);
  EXPECT_THROW(scale(x.data(), 2.0f, x.size(), bad), std::invalid_argument);
  EXPECT_THROW(axpy(2.0f, x.data(), x.data(), x.size(), bad), std::invalid_argument);
  EXPECT_THROW(cast_fp32_to_fp16(x.data(), h.data(), x.size(), bad), std::invalid_argument);
  EXPECT_THROW(cast_fp16_to_fp32(h.data(), x.data(), x.size(), bad), std::invalid_argument);
  EXPECT_THROW(sum_of_squares(x.data(), x.size(), bad), std::invalid_argument);
  EXPECT_THROW(all_finite(x.data(), x.size(), bad), std::invalid_argument);
  EXPECT_THROW(scale_and_check_finite(x.data(), 2.0f, x.size(), bad), std::invalid_argument);
}

#if !GRADWIRE_HAVE_CUDA
// Expects fn to throw std::runtime_error whose message names the build and the function.
template <typename Fn>
void expect_unavailable(Fn fn, const std::string& function) {
  try {
    fn();
    ADD_FAILURE() << function << " on kCuda did not throw";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "gradwire was built without CUDA: " + function + " on Device::kCuda is unavailable");
  }
}

TEST(NoCudaBuild, CudaIsNotAvailable) { EXPECT_FALSE(cuda_device_available()); }

TEST(NoCudaBuild, CudaPrimitivesThrowInsteadOfCrashing) {
  std::vector<float> x(4, 1.0f);
  std::vector<Half> h(4);
  const std::size_t n = x.size();
  expect_unavailable([&] { scale(x.data(), 2.0f, n, Device::kCuda); }, "scale");
  expect_unavailable([&] { axpy(2.0f, x.data(), x.data(), n, Device::kCuda); }, "axpy");
  expect_unavailable([&] { cast_fp32_to_fp16(x.data(), h.data(), n, Device::kCuda); },
                     "cast_fp32_to_fp16");
  expect_unavailable([&] { cast_fp16_to_fp32(h.data(), x.data(), n, Device::kCuda); },
                     "cast_fp16_to_fp32");
  expect_unavailable([&] { sum_of_squares(x.data(), n, Device::kCuda); }, "sum_of_squares");
  expect_unavailable([&] { all_finite(x.data(), n, Device::kCuda); }, "all_finite");
  expect_unavailable([&] { scale_and_check_finite(x.data(), 2.0f, n, Device::kCuda); },
                     "scale_and_check_finite");
  // Even with nothing to do: asking for kCuda in this build is the error.
  expect_unavailable([&] { scale(nullptr, 2.0f, 0, Device::kCuda); }, "scale");
}
#endif

}  // namespace
}  // namespace gw::kernels
