#include "reference_trainer/gpu/device_model.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/elementwise.h"
#include "kernels/nn.h"
#include "reference_trainer/gpu/gpu_ops.h"
#include "reference_trainer/nn/conv2d.h"
#include "reference_trainer/nn/flatten.h"
#include "reference_trainer/nn/gemm.h"
#include "reference_trainer/nn/linear.h"
#include "reference_trainer/nn/max_pool2d.h"
#include "reference_trainer/nn/precision.h"
#include "reference_trainer/nn/relu.h"
#include "reference_trainer/nn/softmax_cross_entropy.h"

namespace gw::trainer::gpu {

using amp::Precision;
using kernels::Buffer;
using kernels::Stream;

// What every layer shares: the stream, products (OpenBLAS on the host, cuBLAS on CUDA), binary16
// rounding, and the count of products by precision. Scratch memory here is used by one call at a
// time: the stream runs them in order.
class Products {
 public:
  explicit Products(const Stream& stream) : stream_(stream) {
    if (!stream.is_host()) blas_ = std::make_unique<Blas>(stream);
  }
  const Stream& stream() const { return stream_; }

  // Row-major C = alpha op(A) op(B) + beta C. With `half`, A and B hold binary16 values (in fp32
  // storage) and the product runs as an fp16 op: on the tensor cores with fp32 accumulation on a
  // GPU, and on the host as Note [CPU rendering of fp16 ops] does it (an fp32 GEMM of those
  // values), so that the host stream keeps the CPU's bits.
  void gemm(bool half, bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, float alpha,
            const float* a, std::size_t lda, const float* b, std::size_t ldb, float beta, float* c,
            std::size_t ldc) {
    ++(half ? fp16_ops_ : fp32_ops_);
    if (!blas_) {
      trainer::gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      return;
    }
    if (!half) {
      blas_->sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      return;
    }
    const std::size_t a_n = (ta ? k : m) * lda, b_n = (tb ? n : k) * ldb;
    Half* ah = a_half_.reserve_discard(a_n, stream_);
    Half* bh = b_half_.reserve_discard(b_n, stream_);
    kernels::cast_fp32_to_fp16(a, ah, a_n, stream_);  // exact: the values are binary16 already
    kernels::cast_fp32_to_fp16(b, bh, b_n, stream_);
    blas_->gemm_fp16(ta, tb, m, n, k, alpha, ah, lda, bh, ldb, beta, c, /*c_half=*/false, ldc);
  }
  // A convolution's forward, input gradient and weight gradient run outside gemm(): counted here.
  void count(bool half, std::int64_t ops) { (half ? fp16_ops_ : fp32_ops_) += ops; }

  // x = (float)(binary16) x, in place.
  void round(float* x, std::size_t n) {
    Half* h = round_half_.reserve_discard(n, stream_);
    kernels::cast_fp32_to_fp16(x, h, n, stream_);
    kernels::cast_fp16_to_fp32(h, x, n, stream_);
  }
  // dst = (float)(binary16) src.
  void rounded_copy(const float* src, float* dst, std::size_t n) {
    Half* h = round_half_.reserve_discard(n, stream_);
    kernels::cast_fp32_to_fp16(src, h, n, stream_);
    kernels::cast_fp16_to_fp32(h, dst, n, stream_);
  }

  std::int64_t fp16_ops() const { return fp16_ops_; }
  std::int64_t fp32_ops() const { return fp32_ops_; }

 private:
  Stream stream_;
  std::unique_ptr<Blas> blas_;
  Buffer<Half> a_half_, b_half_, round_half_;
  std::int64_t fp16_ops_ = 0, fp32_ops_ = 0;
};

// One layer on the stream. forward() may keep pointers to its input: the model keeps every
// activation (and the caller the images) alive until the step's backward has run.
//
// Mixed precision renders the CPU layers' rule (Note [CPU rendering of fp16 ops]) on fp32
// storage: an op the policy runs in fp16 reads its input, its incoming gradient and its
// parameters rounded to binary16, and rounds what it writes (its output, its input gradient, its
// parameters' gradients); an activation an fp16 op wrote is marked half, which is what the next
// op's decision reads (the CPU's fp16 tensor dtype). The values are the CPU's, bit for bit on the
// host stream.
struct DeviceModel::Layer {
  explicit Layer(Products& p) : products(p) {}
  virtual ~Layer() = default;
  virtual const char* op_name() const = 0;
  virtual Shape output_shape(const Shape& input) const = 0;
  // `in_half`: x holds binary16 values an fp16 op wrote. Returns whether y does.
  virtual bool forward(const float* x, bool in_half, const Shape& input, float* y,
                       bool training) = 0;
  // dx null: the first layer, whose input gradient nobody needs.
  virtual void backward(const float* dy, float* dx) = 0;

  void set_policy(const amp::OpPolicy* policy) {
    if32 = policy ? policy->decide(op_name(), true) : Precision::kFloat32;
    if16 = policy ? policy->decide(op_name(), false) : Precision::kFloat32;
  }
  // This forward's precision, from its input's.
  bool decide(bool in_half) {
    half = (in_half ? if16 : if32) == Precision::kFloat16;
    return half;
  }
  // x as this op reads it: rounded into `scratch` when the op is fp16 and x is not binary16.
  const float* view(const float* x, bool x_half, std::size_t n, Buffer<float>& scratch) {
    if (!half || x_half) return x;
    float* r = scratch.reserve_discard(n, products.stream());
    products.rounded_copy(x, r, n);
    return r;
  }
  // Parameter i as this op reads it: the fp32 master, or (fp16) its binary16 working copy.
  const float* param(std::size_t i) {
    if (!half) return values[i];
    float* r = working_[i].reserve_discard(numels[i], products.stream());
    products.rounded_copy(values[i], r, numels[i]);
    return r;
  }
  // After an fp16 op wrote x: round it.
  void finish(float* x, std::size_t n) {
    if (half) products.round(x, n);
  }

  Products& products;
  // The parameters' numels, and where their values and gradients are.
  std::vector<std::size_t> numels;
  std::vector<float*> values, grads;
  Precision if32 = Precision::kFloat32, if16 = Precision::kFloat32;
  bool half = false;

 protected:
  std::map<std::size_t, Buffer<float>> working_;
  Buffer<float> x_scratch_, dy_scratch_;
};

namespace {

using Layer = DeviceModel::Layer;

class LinearLayer final : public Layer {
 public:
  LinearLayer(const Linear& cpu, Products& p)
      : Layer(p), in_(cpu.in_features()), out_(cpu.out_features()) {
    numels = {in_ * out_, out_};
  }
  const char* op_name() const override { return "linear"; }
  Shape output_shape(const Shape& input) const override {
    if (input.rank() != 2 || input[1] != in_) {
      throw std::invalid_argument("Linear(" + std::to_string(in_) + "->" + std::to_string(out_) +
                                  "): expects input [N, " + std::to_string(in_) + "], got " +
                                  input.to_string());
    }
    return {input[0], out_};
  }
  // As trainer::Linear: y = bias in every row, then y += x W^T.
  bool forward(const float* x, bool in_half, const Shape& input, float* y, bool) override {
    decide(in_half);
    n_ = input[0];
    x_ = view(x, in_half, n_ * in_, x_scratch_);
    w_ = param(0);
    kernels::broadcast_rows(param(1), n_, out_, y, products.stream());
    products.gemm(half, false, true, n_, out_, in_, 1.0f, x_, in_, w_, in_, 1.0f, y, out_);
    finish(y, n_ * out_);
    return half;
  }
  void backward(const float* dy_in, float* dx) override {
    const float* dy = view(dy_in, false, n_ * out_, dy_scratch_);
    products.gemm(half, true, false, out_, in_, n_, 1.0f, dy, out_, x_, in_, 0.0f, grads[0], in_);
    kernels::bias_grad(dy, n_, out_, grads[1], products.stream());
    finish(grads[0], in_ * out_);
    finish(grads[1], out_);
    if (dx) {
      products.gemm(half, false, false, n_, in_, out_, 1.0f, dy, out_, w_, in_, 0.0f, dx, in_);
      finish(dx, n_ * in_);
    }
  }

 private:
  std::size_t in_, out_;
  const float* x_ = nullptr;  // the input as the op read it (cached for the weight gradient)
  const float* w_ = nullptr;
  std::size_t n_ = 0;
};

class ReluLayer final : public Layer {
 public:
  explicit ReluLayer(Products& p) : Layer(p) {}
  const char* op_name() const override { return "relu"; }
  Shape output_shape(const Shape& input) const override { return input; }
  bool forward(const float* x, bool in_half, const Shape& input, float* y, bool) override {
    decide(in_half);
    n_ = input.numel();
    x_ = view(x, in_half, n_, x_scratch_);
    kernels::relu_forward(x_, y, n_, products.stream());  // binary16 in, binary16 out
    return half;
  }
  void backward(const float* dy_in, float* dx) override {
    if (!dx) return;
    kernels::relu_backward(x_, view(dy_in, false, n_, dy_scratch_), dx, n_, products.stream());
  }

 private:
  const float* x_ = nullptr;
  std::size_t n_ = 0;
};

class FlattenLayer final : public Layer {
 public:
  explicit FlattenLayer(Products& p) : Layer(p) {}
  const char* op_name() const override { return "flatten"; }
  Shape output_shape(const Shape& input) const override {
    if (input.rank() < 2) {
      throw std::invalid_argument("Flatten: expects [N, ...], got " + input.to_string());
    }
    return {input[0], input.without_batch().numel()};
  }
  bool forward(const float* x, bool in_half, const Shape& input, float* y, bool) override {
    decide(in_half);
    n_ = input.numel();
    kernels::copy_bytes(y, view(x, in_half, n_, x_scratch_), n_ * sizeof(float), products.stream());
    return half;
  }
  void backward(const float* dy_in, float* dx) override {
    if (!dx) return;
    kernels::copy_bytes(dx, view(dy_in, false, n_, dy_scratch_), n_ * sizeof(float),
                        products.stream());
  }

 private:
  std::size_t n_ = 0;
};

class MaxPoolLayer final : public Layer {
 public:
  MaxPoolLayer(const MaxPool2d& cpu, Products& p) : Layer(p), k_(cpu.kernel()) {}
  const char* op_name() const override { return "max_pool2d"; }
  Shape output_shape(const Shape& input) const override {
    if (input.rank() != 4 || input[2] < k_ || input[3] < k_) {
      throw std::invalid_argument("MaxPool2d(" + std::to_string(k_) +
                                  "): expects input [N, C, H, W] with H, W >= " +
                                  std::to_string(k_) + ", got " + input.to_string());
    }
    return {input[0], input[1], input[2] / k_, input[3] / k_};
  }
  bool forward(const float* x, bool in_half, const Shape& input, float* y, bool training) override {
    decide(in_half);
    planes_ = input[0] * input[1];
    h_ = input[2];
    w_ = input[3];
    const float* xv = view(x, in_half, input.numel(), x_scratch_);
    std::uint32_t* argmax = nullptr;
    if (training) argmax = argmax_.reserve_discard(output_shape(input).numel(), products.stream());
    kernels::max_pool2d_forward(xv, planes_, h_, w_, k_, y, argmax, products.stream());
    return half;
  }
  void backward(const float* dy_in, float* dx) override {
    if (!dx) return;
    const std::size_t out = planes_ * (h_ / k_) * (w_ / k_);
    kernels::max_pool2d_backward(view(dy_in, false, out, dy_scratch_), argmax_.data(), planes_, h_,
                                 w_, k_, dx, products.stream());
  }

 private:
  std::size_t k_;
  Buffer<std::uint32_t> argmax_;
  std::size_t planes_ = 0, h_ = 0, w_ = 0;
};

// cuDNN on a CUDA stream (descriptors per batch size and precision: training's and
// evaluation's); on the host the CPU layer itself, its tensors copied in and out, so its own
// mixed-precision rendering applies (Note [The model on a stream]).
class ConvLayer final : public Layer {
 public:
  ConvLayer(const Conv2d& cpu, Products& p) : Layer(p) {
    shape_.in_channels = cpu.in_channels();
    shape_.out_channels = cpu.out_channels();
    shape_.kernel = cpu.kernel();
    shape_.stride = cpu.stride();
    shape_.padding = cpu.padding();
    numels = {shape_.out_channels * shape_.in_channels * shape_.kernel * shape_.kernel,
              shape_.out_channels};
    if (p.stream().is_host()) {
      host_ = std::make_unique<Conv2d>(shape_.in_channels, shape_.out_channels, shape_.kernel,
                                       shape_.stride, shape_.padding);
    } else if (!have_cudnn()) {
      throw std::runtime_error(
          "the CNN's convolutions on a GPU need cuDNN, and gradwire was built without it");
    }
  }
  const char* op_name() const override { return "conv2d"; }
  void set_host_policy(const amp::OpPolicy* policy) {
    if (host_) host_->set_op_policy(policy);
  }
  Shape output_shape(const Shape& input) const override {
    if (input.rank() != 4 || input[1] != shape_.in_channels ||
        input[2] + 2 * shape_.padding < shape_.kernel ||
        input[3] + 2 * shape_.padding < shape_.kernel) {
      throw std::invalid_argument(
          "Conv2d: expects input [N, " + std::to_string(shape_.in_channels) +
          ", H, W] at least a kernel wide with padding, got " + input.to_string());
    }
    ConvShape s = shape_;
    s.height = input[2];
    s.width = input[3];
    return {input[0], shape_.out_channels, s.out_height(), s.out_width()};
  }
  bool forward(const float* x, bool in_half, const Shape& input, float* y, bool training) override {
    decide(in_half);
    input_ = input;
    output_ = output_shape(input);
    products.count(half, 1);
    if (host_) return host_forward(x, in_half, y, training);
    const Stream& s = products.stream();
    Conv2dDnn& c = conv(input[0]);
    if (!half) {
      x_ = x;
      c.forward(x, values[0], values[1], y);
      return false;
    }
    // fp16: binary16 operands and output (the casts round), fp32 accumulation.
    Half* xh = x_half_.reserve_discard(input.numel(), s);
    kernels::cast_fp32_to_fp16(x, xh, input.numel(), s);
    Half* wh = w_half_.reserve_discard(numels[0], s);
    Half* bh = b_half_.reserve_discard(numels[1], s);
    kernels::cast_fp32_to_fp16(values[0], wh, numels[0], s);
    kernels::cast_fp32_to_fp16(values[1], bh, numels[1], s);
    Half* yh = y_half_.reserve_discard(output_.numel(), s);
    c.forward(xh, wh, bh, yh);
    kernels::cast_fp16_to_fp32(yh, y, output_.numel(), s);
    return true;
  }
  void backward(const float* dy, float* dx) override {
    products.count(half, dx ? 2 : 1);
    if (host_) {
      host_backward(dy, dx);
      return;
    }
    const Stream& s = products.stream();
    Conv2dDnn& c = conv(input_[0]);
    if (!half) {
      c.backward_filter(x_, dy, grads[0], grads[1]);
      if (dx) c.backward_data(values[0], dy, dx);
      return;
    }
    Half* dyh = y_half_.reserve_discard(output_.numel(), s);  // the forward's output is spent
    kernels::cast_fp32_to_fp16(dy, dyh, output_.numel(), s);
    Half* dwh = dw_half_.reserve_discard(numels[0], s);
    Half* dbh = db_half_.reserve_discard(numels[1], s);
    c.backward_filter(x_half_.data(), dyh, dwh, dbh);
    kernels::cast_fp16_to_fp32(dwh, grads[0], numels[0], s);
    kernels::cast_fp16_to_fp32(dbh, grads[1], numels[1], s);
    if (dx) {
      Half* dxh = x_half_.reserve_discard(input_.numel(), s);  // read by backward_filter before
      c.backward_data(w_half_.data(), dyh, dxh);
      kernels::cast_fp16_to_fp32(dxh, dx, input_.numel(), s);
    }
  }

 private:
  bool host_forward(const float* x, bool in_half, float* y, bool training) {
    for (std::size_t i = 0; i < 2; ++i) {
      host_->bind_value(i, values[i]);
      host_->bind_gradient(i, grads[i]);
    }
    in_.resize(input_, in_half ? DType::kFloat16 : DType::kFloat32);
    if (in_half) {
      kernels::cast_fp32_to_fp16(x, in_.half_data(), input_.numel(), Stream::host());
    } else {
      std::copy(x, x + input_.numel(), in_.data());
    }
    host_->forward(in_, out_, training);
    to_float(out_, y);
    return out_.dtype() == DType::kFloat16;
  }
  void host_backward(const float* dy, float* dx) {
    dy_.resize(output_);
    std::copy(dy, dy + output_.numel(), dy_.data());
    host_->backward(dy_, dx ? &dx_ : nullptr);
    if (dx) to_float(dx_, dx);
  }
  static void to_float(const Tensor& t, float* out) {
    if (t.dtype() == DType::kFloat16) {
      kernels::cast_fp16_to_fp32(t.half_data(), out, t.numel(), Stream::host());
    } else {
      std::copy(t.data(), t.data() + t.numel(), out);
    }
  }
  Conv2dDnn& conv(std::size_t batch) {
    std::unique_ptr<Conv2dDnn>& c = by_batch_[{batch, half}];
    if (!c) {
      ConvShape s = shape_;
      s.batch = batch;
      s.height = input_[2];
      s.width = input_[3];
      c = std::make_unique<Conv2dDnn>(products.stream(), s, half);
    }
    return *c;
  }

  ConvShape shape_;
  std::unique_ptr<Conv2d> host_;
  Tensor in_, out_, dy_, dx_;
  std::map<std::pair<std::size_t, bool>, std::unique_ptr<Conv2dDnn>> by_batch_;
  Buffer<Half> x_half_, w_half_, b_half_, y_half_, dw_half_, db_half_;
  const float* x_ = nullptr;
  Shape input_, output_;
};

std::unique_ptr<Layer> device_layer(const ModelLayer& l, Products& products) {
  const trainer::Layer* cpu = l.layer.get();
  if (const auto* linear = dynamic_cast<const Linear*>(cpu)) {
    return std::make_unique<LinearLayer>(*linear, products);
  }
  if (dynamic_cast<const ReLU*>(cpu)) return std::make_unique<ReluLayer>(products);
  if (dynamic_cast<const Flatten*>(cpu)) return std::make_unique<FlattenLayer>(products);
  if (const auto* pool = dynamic_cast<const MaxPool2d*>(cpu)) {
    return std::make_unique<MaxPoolLayer>(*pool, products);
  }
  if (const auto* conv = dynamic_cast<const Conv2d*>(cpu)) {
    return std::make_unique<ConvLayer>(*conv, products);
  }
  throw std::invalid_argument("DeviceModel: layer '" + l.name + "' (" + cpu->describe() +
                              ") has no device version");
}

}  // namespace

DeviceModel::DeviceModel(const Model& model, const Stream& stream)
    : stream_(stream),
      kind_(model.kind()),
      sample_shape_(model.sample_shape()),
      num_classes_(model.num_classes()),
      total_(model.num_parameters()),
      values_(model.num_parameters(), stream),
      own_grads_(model.num_parameters(), stream),
      products_(std::make_unique<Products>(stream)) {
  kernels::copy_bytes(values_.data(), model.parameter_buffer(), total_ * sizeof(float), stream_);
  kernels::fill_zero(own_grads_.data(), total_ * sizeof(float), stream_);
  std::size_t offset = 0;
  for (const ModelLayer& l : model.layers()) {
    first_param_.push_back(params_.size());
    layers_.push_back(device_layer(l, *products_));
    Layer& layer = *layers_.back();
    const std::vector<LayerParameter>& cpu_params = l.layer->parameters();
    if (cpu_params.size() != layer.numels.size()) {
      throw std::logic_error("DeviceModel: layer '" + l.name + "' has " +
                             std::to_string(cpu_params.size()) + " parameters on the CPU and " +
                             std::to_string(layer.numels.size()) + " on the device");
    }
    for (std::size_t j = 0; j < cpu_params.size(); ++j) {
      if (cpu_params[j].numel != layer.numels[j]) {
        throw std::logic_error("DeviceModel: parameter " + l.name + "." + cpu_params[j].name +
                               " has another size on the device");
      }
      params_.push_back(Model::Parameter{l.name + "." + cpu_params[j].name, values_.data() + offset,
                                         cpu_params[j].numel, cpu_params[j].rows});
      layer.values.push_back(values_.data() + offset);
      layer.grads.push_back(own_grads_.data() + offset);
      grads_.push_back(own_grads_.data() + offset);
      offset += cpu_params[j].numel;
    }
  }
  activations_.resize(layers_.size());
  stream_.synchronize();  // the host's parameter buffer may go away after this
}

DeviceModel::~DeviceModel() = default;

void DeviceModel::set_op_policy(const amp::OpPolicy* policy) {
  if (policy != nullptr) {
    for (const auto& l : layers_) policy->list_of(l->op_name());  // throws on an unknown op
    policy->list_of(SoftmaxCrossEntropy::kOpName);
  }
  for (auto& l : layers_) {
    l->set_policy(policy);
    if (auto* conv = dynamic_cast<ConvLayer*>(l.get())) conv->set_host_policy(policy);
  }
  loss_if32_ = policy ? policy->decide(SoftmaxCrossEntropy::kOpName, true) : Precision::kFloat32;
  loss_if16_ = policy ? policy->decide(SoftmaxCrossEntropy::kOpName, false) : Precision::kFloat32;
}

std::int64_t DeviceModel::fp16_products() const { return products_->fp16_ops(); }
std::int64_t DeviceModel::fp32_products() const { return products_->fp32_ops(); }

void DeviceModel::bind_gradients(const std::vector<float*>& grads) {
  check_gradient_views(params_, grads, "DeviceModel::bind_gradients");
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    for (std::size_t j = 0; j < layers_[i]->grads.size(); ++j) {
      layers_[i]->grads[j] = grads[first_param_[i] + j];
    }
  }
  grads_ = grads;
}

const float* DeviceModel::run_forward(const float* images, std::size_t batch, bool training) {
  if (batch == 0 || images == nullptr) {
    throw std::invalid_argument("DeviceModel: empty batch or null images");
  }
  const float* x = images;
  bool half = false;
  Shape shape = sample_shape_.with_batch(batch);
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    Activation& out = activations_[i];
    out.shape = layers_[i]->output_shape(shape);
    float* y = out.data.reserve_discard(out.shape.numel(), stream_);
    half = layers_[i]->forward(x, half, shape, y, training);
    x = y;
    shape = out.shape;
  }
  if (shape.rank() != 2 || shape[1] != num_classes_) {
    throw std::logic_error("DeviceModel: logits " + shape.to_string() + ", expected [N, " +
                           std::to_string(num_classes_) + "]");
  }
  logits_half_ = half;
  return x;
}

void DeviceModel::check_labels(const std::uint8_t* labels, std::size_t batch, const char* who,
                               bool read_from_device) const {
  if (labels == nullptr) {
    throw std::invalid_argument(std::string("DeviceModel::") + who + ": null labels");
  }
  std::size_t bad = batch;
  if (stream_.is_host()) {
    for (std::size_t r = 0; r < batch && bad == batch; ++r) {
      if (labels[r] >= num_classes_) bad = r;
    }
  } else if (read_from_device) {
    bad = kernels::first_bad_label(labels, batch, num_classes_, stream_);
  }
  if (bad == batch) return;
  std::uint8_t label = 0;
  kernels::copy_bytes(&label, labels + bad, 1, stream_);
  stream_.synchronize();
  throw std::invalid_argument("SoftmaxCrossEntropy: label " + std::to_string(label) +
                              " of sample " + std::to_string(bad) + " is not below " +
                              std::to_string(num_classes_) + " classes");
}

// As SoftmaxCrossEntropy::forward: in the precision the policy gives it for the logits' dtype;
// in fp16 the logits are read rounded and the probabilities rounded.
void DeviceModel::loss_forward(const float* logits, const std::uint8_t* labels, std::size_t batch) {
  loss_half_ = (logits_half_ ? loss_if16_ : loss_if32_) == Precision::kFloat16;
  const std::size_t n = batch * num_classes_;
  const float* z = logits;
  if (loss_half_ && !logits_half_) {
    float* r = logits_scratch_.reserve_discard(n, stream_);
    products_->rounded_copy(logits, r, n);
    z = r;
  }
  float* probs = probs_.reserve_discard(n, stream_);
  float* loss = loss_rows_.reserve_discard(batch, stream_);
  kernels::softmax_cross_entropy_forward(z, labels, batch, num_classes_, probs, loss, stream_);
  if (loss_half_) products_->round(probs, n);
}

// The per-sample losses summed in double in sample order (each rounded to binary16 first when
// the loss ran in fp16), as SoftmaxCrossEntropy does.
double DeviceModel::loss_sum(std::size_t batch) {
  float* host = loss_host_.reserve_discard(batch);
  kernels::copy_bytes(host, loss_rows_.data(), batch * sizeof(float), stream_);
  stream_.synchronize();
  return sum_sample_losses(host, batch, loss_half_);
}

float DeviceModel::forward_backward(const float* images, const std::uint8_t* labels,
                                    std::size_t batch, const GradientReadyFn& on_gradient_ready,
                                    float loss_scale) {
  check_labels(labels, batch, "forward_backward", /*read_from_device=*/false);
  const float* logits = run_forward(images, batch, true);
  loss_forward(logits, labels, batch);
  float* grad_out = grad_a_.reserve_discard(batch * num_classes_, stream_);
  kernels::softmax_cross_entropy_backward(probs_.data(), labels, batch, num_classes_,
                                          loss_scale / static_cast<float>(batch), grad_out,
                                          stream_);
  if (loss_half_) products_->round(grad_out, batch * num_classes_);
  for (std::size_t i = layers_.size(); i-- > 0;) {
    float* grad_in = nullptr;
    if (i > 0) {
      const Shape& in_shape = activations_[i - 1].shape;
      grad_in = (grad_out == grad_a_.data() ? grad_b_ : grad_a_)
                    .reserve_discard(in_shape.numel(), stream_);
    }
    layers_[i]->backward(grad_out, grad_in);
    if (on_gradient_ready) {
      for (std::size_t k = layers_[i]->numels.size(); k-- > 0;) {
        on_gradient_ready(first_param_[i] + k);
      }
    }
    grad_out = grad_in;
  }
  return static_cast<float>(loss_sum(batch) / static_cast<double>(batch));
}

void DeviceModel::evaluate(const float* images, const std::uint8_t* labels, std::size_t batch,
                           double* loss_sum_out, std::int64_t* correct) {
  check_labels(labels, batch, "evaluate", /*read_from_device=*/true);
  const float* logits = run_forward(images, batch, false);
  loss_forward(logits, labels, batch);
  if (loss_sum_out != nullptr) *loss_sum_out += loss_sum(batch);
  if (correct != nullptr) {
    *correct += static_cast<std::int64_t>(
        kernels::count_correct(logits, labels, batch, num_classes_, stream_));
  }
}

}  // namespace gw::trainer::gpu
