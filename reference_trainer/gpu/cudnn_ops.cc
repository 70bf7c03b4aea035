// Conv2dDnn on cuDNN (Note [GPU GEMM and convolution]). Built when cuDNN is found.
#include <cudnn.h>

#include <stdexcept>
#include <string>

#include "reference_trainer/gpu/gpu_ops.h"

namespace gw::trainer::gpu {
namespace {

void check(cudnnStatus_t status, const char* call) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  throw std::runtime_error(std::string(call) + " failed: " + cudnnGetErrorString(status));
}

int to_int(std::size_t v, const char* what) {
  if (v == 0 || v > (std::size_t{1} << 30)) {
    throw std::invalid_argument(std::string("cuDNN shape: ") + what + " = " + std::to_string(v) +
                                " is not in [1, 2^30]");
  }
  return static_cast<int>(v);
}

// A handle bound to the stream; each layer owns one (creating one costs milliseconds, once).
struct Handle {
  cudnnHandle_t h = nullptr;
  explicit Handle(const kernels::Stream& stream) {
    if (stream.is_host()) throw std::runtime_error("cuDNN layers need a CUDA stream, not the host");
    stream.make_current();
    check(cudnnCreate(&h), "cudnnCreate");
    check(cudnnSetStream(h, static_cast<cudaStream_t>(stream.native())), "cudnnSetStream");
  }
  ~Handle() {
    if (h) cudnnDestroy(h);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
};

struct TensorDesc {
  cudnnTensorDescriptor_t d = nullptr;
  TensorDesc(cudnnDataType_t type, int n, int c, int h, int w) {
    check(cudnnCreateTensorDescriptor(&d), "cudnnCreateTensorDescriptor");
    check(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, type, n, c, h, w),
          "cudnnSetTensor4dDescriptor");
  }
  ~TensorDesc() {
    if (d) cudnnDestroyTensorDescriptor(d);
  }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
};

cudnnDataType_t data_type(bool half) { return half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT; }

constexpr cudnnConvolutionFwdAlgo_t kForward = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
constexpr cudnnConvolutionBwdDataAlgo_t kBackwardData = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
constexpr cudnnConvolutionBwdFilterAlgo_t kBackwardFilter = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;

}  // namespace

bool have_cudnn() { return true; }

struct Conv2dDnn::Impl {
  kernels::Stream stream;
  Handle handle;
  TensorDesc x, y, bias;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  kernels::Buffer<unsigned char> workspace;

  Impl(const kernels::Stream& s, const ConvShape& c, bool half)
      : stream(s),
        handle(s),
        x(data_type(half), to_int(c.batch, "batch"), to_int(c.in_channels, "in_channels"),
          to_int(c.height, "height"), to_int(c.width, "width")),
        y(data_type(half), to_int(c.batch, "batch"), to_int(c.out_channels, "out_channels"),
          to_int(c.out_height(), "output height"), to_int(c.out_width(), "output width")),
        bias(data_type(half), 1, to_int(c.out_channels, "out_channels"), 1, 1) {
    check(cudnnCreateFilterDescriptor(&w), "cudnnCreateFilterDescriptor");
    check(cudnnSetFilter4dDescriptor(w, data_type(half), CUDNN_TENSOR_NCHW,
                                     to_int(c.out_channels, "out_channels"),
                                     to_int(c.in_channels, "in_channels"),
                                     to_int(c.kernel, "kernel"), to_int(c.kernel, "kernel")),
          "cudnnSetFilter4dDescriptor");
    check(cudnnCreateConvolutionDescriptor(&conv), "cudnnCreateConvolutionDescriptor");
    const int pad = static_cast<int>(c.padding);
    check(cudnnSetConvolution2dDescriptor(conv, pad, pad, to_int(c.stride, "stride"),
                                          to_int(c.stride, "stride"), 1, 1, CUDNN_CROSS_CORRELATION,
                                          CUDNN_DATA_FLOAT),
          "cudnnSetConvolution2dDescriptor");
    check(cudnnSetConvolutionMathType(conv, half ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH),
          "cudnnSetConvolutionMathType");
    std::size_t fwd = 0, bwd_data = 0, bwd_filter = 0;
    check(cudnnGetConvolutionForwardWorkspaceSize(handle.h, x.d, w, conv, y.d, kForward, &fwd),
          "cudnnGetConvolutionForwardWorkspaceSize");
    check(cudnnGetConvolutionBackwardDataWorkspaceSize(handle.h, w, y.d, conv, x.d, kBackwardData,
                                                       &bwd_data),
          "cudnnGetConvolutionBackwardDataWorkspaceSize");
    check(cudnnGetConvolutionBackwardFilterWorkspaceSize(handle.h, x.d, y.d, conv, w,
                                                         kBackwardFilter, &bwd_filter),
          "cudnnGetConvolutionBackwardFilterWorkspaceSize");
    std::size_t bytes = fwd;
    if (bwd_data > bytes) bytes = bwd_data;
    if (bwd_filter > bytes) bytes = bwd_filter;
    workspace = kernels::Buffer<unsigned char>(bytes, stream);
  }
  ~Impl() {
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
    if (w) cudnnDestroyFilterDescriptor(w);
  }
};

Conv2dDnn::Conv2dDnn(const kernels::Stream& stream, const ConvShape& shape, bool half)
    : shape_(shape) {
  if (shape.kernel == 0 || shape.stride == 0 || shape.height + 2 * shape.padding < shape.kernel ||
      shape.width + 2 * shape.padding < shape.kernel) {
    throw std::invalid_argument(
        "Conv2dDnn: kernel and stride must be positive and the padded "
        "input at least one kernel wide");
  }
  impl_ = std::make_unique<Impl>(stream, shape, half);
}

Conv2dDnn::~Conv2dDnn() = default;

void Conv2dDnn::forward(const void* x, const void* w, const void* bias, void* y) {
  Impl& s = *impl_;
  s.stream.make_current();
  const float one = 1.0f, zero = 0.0f;
  check(cudnnConvolutionForward(s.handle.h, &one, s.x.d, x, s.w, w, s.conv, kForward,
                                s.workspace.data(), s.workspace.size(), &zero, s.y.d, y),
        "cudnnConvolutionForward");
  check(cudnnAddTensor(s.handle.h, &one, s.bias.d, bias, &one, s.y.d, y), "cudnnAddTensor");
}

void Conv2dDnn::backward_data(const void* w, const void* dy, void* dx) {
  Impl& s = *impl_;
  s.stream.make_current();
  const float one = 1.0f, zero = 0.0f;
  check(cudnnConvolutionBackwardData(s.handle.h, &one, s.w, w, s.y.d, dy, s.conv, kBackwardData,
                                     s.workspace.data(), s.workspace.size(), &zero, s.x.d, dx),
        "cudnnConvolutionBackwardData");
}

void Conv2dDnn::backward_filter(const void* x, const void* dy, void* dw, void* db) {
  Impl& s = *impl_;
  s.stream.make_current();
  const float one = 1.0f, zero = 0.0f;
  check(
      cudnnConvolutionBackwardFilter(s.handle.h, &one, s.x.d, x, s.y.d, dy, s.conv, kBackwardFilter,
                                     s.workspace.data(), s.workspace.size(), &zero, s.w, dw),
      "cudnnConvolutionBackwardFilter");
  check(cudnnConvolutionBackwardBias(s.handle.h, &one, s.y.d, dy, &zero, s.bias.d, db),
        "cudnnConvolutionBackwardBias");
}

}  // namespace gw::trainer::gpu
