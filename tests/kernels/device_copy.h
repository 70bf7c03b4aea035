// A device copy of a host vector, for the tests that run primitives on a CUDA stream and compare
// with the host (sparse_cuda_test.cc, nn_cuda_test.cc).
#pragma once

#include <vector>

#include "kernels/stream.h"

namespace gw::kernels::test_util {

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
