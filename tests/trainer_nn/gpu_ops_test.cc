// The GPU mode's cuBLAS and cuDNN calls (reference_trainer/gpu) against the CPU layers they stand
// in for: the same products and convolutions within float tolerance
// (Note [GPU GEMM and convolution]). The Gpu* suites skip without a GPU (their CTest test then
// shows as skipped); GpuOpsWithoutDevice runs anywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "amp/op_policy.h"
#include "kernels/device.h"
#include "kernels/elementwise.h"
#include "kernels/stream.h"
#include "reference_trainer/gpu/device_model.h"
#include "reference_trainer/gpu/gpu_ops.h"
#include "reference_trainer/nn/conv2d.h"
#include "reference_trainer/nn/gemm.h"
#include "reference_trainer/nn/make_model.h"
#include "reference_trainer/optim/adam.h"
#include "reference_trainer/optim/sgd.h"
#include "test_util.h"

namespace gw::trainer {
namespace {

using kernels::Buffer;
using kernels::Stream;

template <class T>
Buffer<T> to_device(const std::vector<T>& host, const Stream& s) {
  Buffer<T> d(host.size(), s);
  kernels::copy_bytes(d.data(), host.data(), host.size() * sizeof(T), s);
  return d;
}

template <class T>
std::vector<T> to_host(const Buffer<T>& d, const Stream& s) {
  std::vector<T> host(d.size());
  kernels::copy_bytes(host.data(), d.data(), host.size() * sizeof(T), s);
  s.synchronize();
  return host;
}

std::vector<float> uniform(std::size_t n, std::mt19937_64& rng) {
  std::vector<float> v(n);
  testing::fill_uniform(v.data(), n, rng, -1.0f, 1.0f);
  return v;
}

// |a - b| <= atol + rtol |b| everywhere; the first failure named.
void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rtol,
                  double atol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::fabs(double{got[i]} - want[i]) > atol + rtol * std::fabs(double{want[i]})) {
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", the CPU's " << want[i];
      return;
    }
  }
}

class GpuOps : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!kernels::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_F(GpuOps, SgemmMatchesTheCpuGemmForEveryTransposition) {
  const Stream s = Stream::cuda();
  gpu::Blas blas(s);
  std::mt19937_64 rng(3);
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      const std::size_t m = 37, n = 19, k = 300;
      const std::vector<float> a = uniform(m * k, rng), b = uniform(k * n, rng);
      std::vector<float> c = uniform(m * n, rng), want = c;
      const std::size_t lda = ta ? m : k, ldb = tb ? k : n;
      gemm(ta, tb, m, n, k, 0.5f, a.data(), lda, b.data(), ldb, 0.25f, want.data(), n);
      const auto da = to_device(a, s), db = to_device(b, s);
      auto dc = to_device(c, s);
      blas.sgemm(ta, tb, m, n, k, 0.5f, da.data(), lda, db.data(), ldb, 0.25f, dc.data(), n);
      // fp32 both sides, only the summation order differs: without TF32
      // (Note [GPU GEMM and convolution]) the error stays at float rounding over k = 300 terms.
      expect_close(to_host(dc, s), want, 1e-5, 1e-5,
                   std::string("sgemm ta=") + (ta ? "1" : "0") + " tb=" + (tb ? "1" : "0"));
    }
  }
  EXPECT_EQ(blas.fp32_calls(), 4);
  EXPECT_EQ(blas.fp16_calls(), 0);
}

// fp16 operands with fp32 accumulation: the CPU rendering (Note [CPU rendering of fp16 ops]) is
// the operands rounded to binary16, an fp32 GEMM, the output rounded to binary16.
TEST_F(GpuOps, Fp16GemmMatchesTheCpuRenderingOfFp16Ops) {
  const Stream s = Stream::cuda();
  const Stream host = Stream::host();
  gpu::Blas blas(s);
  std::mt19937_64 rng(4);
  const std::size_t m = 64, n = 48, k = 256;
  const std::vector<float> a = uniform(m * k, rng), b = uniform(k * n, rng);
  std::vector<Half> ah(a.size()), bh(b.size());
  kernels::cast_fp32_to_fp16(a.data(), ah.data(), a.size(), host);
  kernels::cast_fp32_to_fp16(b.data(), bh.data(), b.size(), host);
  std::vector<float> ar(a.size()), br(b.size()), want(m * n, 0.0f);
  kernels::cast_fp16_to_fp32(ah.data(), ar.data(), a.size(), host);
  kernels::cast_fp16_to_fp32(bh.data(), br.data(), b.size(), host);
  gemm(false, true, m, n, k, 1.0f, ar.data(), k, br.data(), k, 0.0f, want.data(), n);
  const auto da = to_device(ah, s), db = to_device(bh, s);
  Buffer<Half> dc(m * n, s);
  blas.gemm_fp16(false, true, m, n, k, 1.0f, da.data(), k, db.data(), k, 0.0f, dc.data(), true, n);
  const std::vector<Half> got_h = to_host(dc, s);
  std::vector<float> got(got_h.size());
  kernels::cast_fp16_to_fp32(got_h.data(), got.data(), got.size(), host);
  // One binary16 rounding of the output (2^-11 relative) plus the summation order.
  expect_close(got, want, 1e-3, 1e-3, "gemm_fp16");
  EXPECT_EQ(blas.fp16_calls(), 1);
}

TEST_F(GpuOps, CudnnConvolutionMatchesTheCpuConv2d) {
  if (!gpu::have_cudnn()) GTEST_SKIP() << "built without cuDNN";
  const Stream s = Stream::cuda();
  std::mt19937_64 rng(5);
  for (const gpu::ConvShape shape :
       {gpu::ConvShape{8, 1, 28, 28, 16, 5, 1, 2}, gpu::ConvShape{4, 3, 11, 9, 6, 3, 2, 1}}) {
    Conv2d layer(shape.in_channels, shape.out_channels, shape.kernel, shape.stride, shape.padding);
    testing::OwnedParameters params(layer, rng);
    const Tensor x =
        testing::random_tensor({shape.batch, shape.in_channels, shape.height, shape.width}, rng);
    Tensor y, dx;
    layer.forward(x, y, true);
    const Tensor dy = testing::random_tensor(y.shape(), rng);
    layer.backward(dy, &dx);

    gpu::Conv2dDnn conv(s, shape, /*half=*/false);
    const auto d_x = to_device(std::vector<float>(x.data(), x.data() + x.numel()), s);
    const auto d_w = to_device(params.values[0], s), d_b = to_device(params.values[1], s);
    const auto d_dy = to_device(std::vector<float>(dy.data(), dy.data() + dy.numel()), s);
    Buffer<float> d_y(y.numel(), s), d_dx(x.numel(), s), d_dw(params.values[0].size(), s),
        d_db(params.values[1].size(), s);
    conv.forward(d_x.data(), d_w.data(), d_b.data(), d_y.data());
    conv.backward_data(d_w.data(), d_dy.data(), d_dx.data());
    conv.backward_filter(d_x.data(), d_dy.data(), d_dw.data(), d_db.data());
    const std::string what = layer.describe();
    expect_close(to_host(d_y, s), std::vector<float>(y.data(), y.data() + y.numel()), 1e-4, 1e-4,
                 what + " output");
    expect_close(to_host(d_dx, s), std::vector<float>(dx.data(), dx.data() + dx.numel()), 1e-4,
                 1e-4, what + " input gradient");
    expect_close(to_host(d_dw, s), params.grads[0], 1e-4, 1e-3, what + " weight gradient");
    expect_close(to_host(d_db, s), params.grads[1], 1e-4, 1e-3, what + " bias gradient");
  }
}

// ||got - want|| <= rtol ||want|| (Euclidean norms): for runs whose rounding differs (mixed
// precision rounds every fp16 op's output, so a different summation order can move a value by
// one binary16 step, and that propagates).
void expect_close_in_norm(const std::vector<float>& got, const std::vector<float>& want,
                          double rtol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    diff += (double{got[i]} - want[i]) * (double{got[i]} - want[i]);
    norm += double{want[i]} * want[i];
  }
  EXPECT_LE(std::sqrt(diff), rtol * std::sqrt(norm) + 1e-12) << what;
}

// The whole model on a GPU against the CPU Model (Note [The model on a stream]): cuBLAS's and
// cuDNN's summation orders differ from OpenBLAS's and im2col's, so within a tolerance; the
// per-element work is the CPU's arithmetic. In fp32, and under mixed precision (the standard op
// lists), where the products run on the tensor cores and every allow-listed product is counted
// as fp16.
TEST_F(GpuOps, DeviceModelMatchesTheCpuModel) {
  const Stream s = Stream::cuda();
  const amp::OpPolicy defaults = amp::OpPolicy::defaults();
  for (const char* kind : {"mlp", "cnn"}) {
    if (std::string(kind) == "cnn" && !gpu::have_cudnn()) continue;
    for (const amp::OpPolicy* policy : {static_cast<const amp::OpPolicy*>(nullptr), &defaults}) {
      SCOPED_TRACE(std::string(kind) + (policy ? " amp" : " fp32"));
      const std::unique_ptr<Model> cpu = make_model(kind, 21);
      gpu::DeviceModel dev(*cpu, s);
      cpu->set_op_policy(policy);
      dev.set_op_policy(policy);
      std::mt19937_64 rng(8);
      const std::size_t batch = 16;
      std::vector<float> images(batch * cpu->input_size());
      testing::fill_uniform(images.data(), images.size(), rng, 0.0f, 1.0f);
      std::vector<std::uint8_t> labels(batch);
      for (std::size_t i = 0; i < batch; ++i) labels[i] = static_cast<std::uint8_t>(rng() % 10);
      const auto d_images = to_device(images, s);
      const auto d_labels = to_device(labels, s);
      const float cpu_loss = cpu->forward_backward(images.data(), labels.data(), batch);
      const float dev_loss = dev.forward_backward(d_images.data(), d_labels.data(), batch);
      const double loss_rtol = policy ? 1e-2 : 1e-5;
      EXPECT_NEAR(dev_loss, cpu_loss, loss_rtol * std::fabs(cpu_loss));
      for (std::size_t i = 0; i < cpu->parameters().size(); ++i) {
        const std::size_t n = cpu->parameters()[i].numel;
        std::vector<float> got(n);
        kernels::copy_bytes(got.data(), dev.gradient(i), n * sizeof(float), s);
        s.synchronize();
        const std::vector<float> want(cpu->gradient(i), cpu->gradient(i) + n);
        if (policy) {
          expect_close_in_norm(got, want, 2e-2, cpu->parameters()[i].name);
        } else {
          expect_close(got, want, 1e-3, 1e-5, cpu->parameters()[i].name);
        }
      }
      EXPECT_EQ(dev.fp16_products() > 0, policy != nullptr);
      double cpu_sum = 0, dev_sum = 0;
      std::int64_t cpu_correct = 0, dev_correct = 0;
      cpu->evaluate(images.data(), labels.data(), batch, &cpu_sum, &cpu_correct);
      dev.evaluate(d_images.data(), d_labels.data(), batch, &dev_sum, &dev_correct);
      EXPECT_NEAR(dev_sum, cpu_sum, loss_rtol * cpu_sum);
      if (!policy) EXPECT_EQ(dev_correct, cpu_correct);
    }
  }
}

// Sgd and Adam on a CUDA stream: kernels/nn.h promises the host's bits for their updates, so
// three steps on the device equal three on the host exactly; and the state saved on the device
// loads on the host (the same format) and goes on identically.
TEST_F(GpuOps, SgdAndAdamOnTheDeviceEqualTheHostBitForBit) {
  const Stream s = Stream::cuda();
  std::mt19937_64 rng(12);
  const std::size_t n = 1000;
  const std::vector<float> w0 = uniform(n, rng);
  std::vector<std::vector<float>> grads;
  for (int step = 0; step < 4; ++step) grads.push_back(uniform(n, rng));
  for (const char* which : {"sgd", "adam"}) {
    SCOPED_TRACE(which);
    const auto make = [&](const Stream& on) -> std::unique_ptr<gw::Optimizer> {
      if (std::string(which) == "sgd") {
        Sgd::Options o;
        o.lr = 0.1;
        o.momentum = 0.9;
        o.nesterov = true;
        o.weight_decay = 1e-3;
        o.stream = on;
        return std::make_unique<Sgd>(o);
      }
      Adam::Options o;
      o.lr = 0.01;
      o.weight_decay = 1e-3;
      o.stream = on;
      return std::make_unique<Adam>(o);
    };
    auto host_opt = make(Stream::host());
    auto dev_opt = make(s);
    std::vector<float> w = w0;
    auto dw = to_device(w0, s);
    std::string saved;
    for (int step = 0; step < 4; ++step) {
      auto dg = to_device(grads[step], s);
      host_opt->step({{"w", w.data(), grads[step].data(), n, 0.5f}});
      dev_opt->step({{"w", dw.data(), dg.data(), n, 0.5f}});
      s.synchronize();
      ASSERT_EQ(to_host(dw, s), w) << "step " << step;
      if (step == 2) {
        std::ostringstream out;
        dev_opt->save_state(out);
        saved = out.str();
      }
    }
    // The device's state after step 2 is the host's after the same 3 steps, byte for byte, and
    // loaded into a fresh host optimizer it takes step 3 exactly as the host does.
    auto reference = make(Stream::host());
    std::vector<float> w3 = w0;
    for (int step = 0; step < 3; ++step) {
      reference->step({{"w", w3.data(), grads[step].data(), n, 0.5f}});
    }
    std::ostringstream ref_state;
    reference->save_state(ref_state);
    EXPECT_EQ(saved, ref_state.str());
    auto again = make(Stream::host());
    std::istringstream in(saved);
    again->load_state(in);
    std::vector<float> w2 = w3;
    again->step({{"w", w2.data(), grads[3].data(), n, 0.5f}});
    reference->step({{"w", w3.data(), grads[3].data(), n, 0.5f}});
    EXPECT_EQ(w2, w3);
    std::ostringstream a, b;
    again->save_state(a);
    reference->save_state(b);
    EXPECT_EQ(a.str(), b.str());
  }
}

// Runs anywhere: the GPU classes refuse the host stream (and, in a build without CUDA or cuDNN,
// say which is missing) with an error, never a crash.
TEST(GpuOpsWithoutDevice, TheHostStreamIsRefusedWithAClearError) {
  const Stream host = Stream::host();
  try {
    gpu::Blas blas(host);
    ADD_FAILURE() << "gpu::Blas accepted the host stream";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_TRUE(msg.find("needs a CUDA stream") != std::string::npos ||
                msg.find("built without CUDA") != std::string::npos)
        << msg;
  }
  try {
    gpu::Conv2dDnn conv(host, gpu::ConvShape{1, 1, 4, 4, 1, 3, 1, 0}, false);
    ADD_FAILURE() << "gpu::Conv2dDnn accepted the host stream";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_TRUE(msg.find("need a CUDA stream") != std::string::npos ||
                msg.find("built without it") != std::string::npos)
        << msg;
  }
}

}  // namespace
}  // namespace gw::trainer
