// What the tests that run primitives on a CUDA stream and compare with the host share
// (sparse_cuda_test.cc, nn_cuda_test.cc): a fixture that skips without a device, and device copies
// of host vectors.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "kernels/device.h"
#include "kernels/stream.h"

namespace gw::kernels::test_util {

// Each test gets a fresh CUDA stream, its device made current; without a usable device the test
// skips (and CTest shows it as skipped).
class CudaStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_device_available()) {
      GTEST_SKIP() << "no CUDA device: the CUDA kernels are built but cannot run here";
    }
    stream_ = Stream::cuda();
    stream_.make_current();
  }
  Stream stream_ = Stream::host();
};

// A copy of `host` in the memory of `stream`'s device, made on that stream.
template <typename T>
class DeviceCopy {
 public:
  DeviceCopy(const std::vector<T>& host, const Stream& stream)
      : buffer_(host.size(), stream), stream_(stream) {
    copy_bytes(buffer_.data(), host.data(), host.size() * sizeof(T), stream_);
  }
  T* get() { return buffer_.data(); }
  std::vector<T> to_host() const {
    std::vector<T> host(buffer_.size());
    copy_bytes(host.data(), buffer_.data(), host.size() * sizeof(T), stream_);
    stream_.synchronize();
    return host;
  }

 private:
  Buffer<T> buffer_;
  Stream stream_;
};

}  // namespace gw::kernels::test_util
