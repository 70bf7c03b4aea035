// The cuDNN convolution in a build without cuDNN (or without CUDA): each is a clear error naming
// what is missing, never a crash. The MLP's GPU mode needs only cuBLAS.
#include <stdexcept>
#include <string>

#include "reference_trainer/gpu/gpu_ops.h"

namespace gw::trainer::gpu {
namespace {

[[noreturn]] void unavailable(const char* what) {
  throw std::runtime_error(std::string(what) +
                           " needs cuDNN, and gradwire was built without it (CMake found no "
                           "cudnn.h and libcudnn beside the CUDA toolkit)");
}

}  // namespace

bool have_cudnn() { return false; }

struct Conv2dDnn::Impl {};
Conv2dDnn::Conv2dDnn(const kernels::Stream&, const ConvShape& shape, bool) : shape_(shape) {
  unavailable("Conv2dDnn");
}
Conv2dDnn::~Conv2dDnn() = default;
void Conv2dDnn::forward(const void*, const void*, const void*, void*) { unavailable("Conv2dDnn"); }
void Conv2dDnn::backward_data(const void*, const void*, void*) { unavailable("Conv2dDnn"); }
void Conv2dDnn::backward_filter(const void*, const void*, void*, void*) {
  unavailable("Conv2dDnn");
}

}  // namespace gw::trainer::gpu
