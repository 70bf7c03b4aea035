#include "kernels/elementwise.h"

#include <stdexcept>
#include <string>

#include "kernels/cpu/elementwise_cpu.h"
#include "kernels/cuda/elementwise_cuda.h"

namespace gw::kernels {

namespace {

[[noreturn]] void throw_invalid_device(const char* function, Device device) {
  throw std::invalid_argument(std::string("gw::kernels::") + function + ": invalid Device value " +
                              std::to_string(static_cast<int>(device)));
}

}  // namespace

void scale(float* x, float alpha, std::size_t n, Device device) {
  switch (device) {
    case Device::kHost:
      return cpu::scale(x, alpha, n);
    case Device::kCuda:
      return cuda::scale(x, alpha, n);
  }
  throw_invalid_device("scale", device);
}

void axpy(float alpha, const float* x, float* y, std::size_t n, Device device) {
  switch (device) {
    case Device::kHost:
      return cpu::axpy(alpha, x, y, n);
    case Device::kCuda:
      return cuda::axpy(alpha, x, y, n);
  }
  throw_invalid_device("axpy", device);
}

void cast_fp32_to_fp16(const float* in, Half* out, std::size_t n, Device device) {
  switch (device) {
    case Device::kHost:
      return cpu::cast_fp32_to_fp16(in, out, n);
    case Device::kCuda:
      return cuda::cast_fp32_to_fp16(in, out, n);
  }
  throw_invalid_device("cast_fp32_to_fp16", device);
}

void cast_fp16_to_fp32(const Half* in, float* out, std::size_t n, Device device) {
  switch (device) {
    case Device::kHost:
      return cpu::cast_fp16_to_fp32(in, out, n);
    case Device::kCuda:
      return cuda::cast_fp16_to_fp32(in, out, n);
  }
  throw_invalid_device("cast_fp16_to_fp32", device);
}

double sum_of_squares(const float* x, std::size_t n, Device device) {
  switch (device) {
    case Device::kHost:
      return cpu::sum_of_squares(x, n);
    case Device::kCuda:
      return cuda::sum_of_squares(x, n);
  }
  throw_invalid_device("sum_of_squares", device);
}

bool all_finite(const float* x, std::size_t n, Device device) {
  switch (device) {
    case Device::kHost:
      return cpu::all_finite(x, n);
    case Device::kCuda:
      return cuda::all_finite(x, n);
  }
  throw_invalid_device("all_finite", device);
}

bool scale_and_check_finite(float* x, float alpha, std::size_t n, Device device) {
  switch (device) {
    case Device::kHost:
      return cpu::scale_and_check_finite(x, alpha, n);
    case Device::kCuda:
      return cuda::scale_and_check_finite(x, alpha, n);
  }
  throw_invalid_device("scale_and_check_finite", device);
}

}  // namespace gw::kernels
