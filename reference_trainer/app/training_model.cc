#include "reference_trainer/app/training_model.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>

#include "gradwire/config.h"
#include "kernels/device.h"
#include "kernels/nn.h"
#include "reference_trainer/data/sharder.h"
#include "reference_trainer/gpu/device_model.h"
#include "reference_trainer/nn/make_model.h"

namespace gw::trainer {
namespace {

std::vector<ParameterSpec> specs_of(const std::vector<Model::Parameter>& params) {
  std::vector<ParameterSpec> specs;
  for (const auto& p : params) specs.push_back({p.name, p.value, p.numel, p.rows});
  return specs;
}

class HostTrainingModel final : public TrainingModel {
 public:
  HostTrainingModel(std::unique_ptr<Model> model, const FashionMnist& data)
      : model_(std::move(model)), data_(data) {}

  std::string describe() const override { return model_->describe(); }
  std::size_t num_parameters() const override { return model_->num_parameters(); }
  const kernels::Stream& stream() const override { return host_; }
  std::vector<ParameterSpec> parameter_specs() const override {
    return specs_of(model_->parameters());
  }
  void bind_gradients(const std::vector<float*>& grads) override { model_->bind_gradients(grads); }
  void set_op_policy(const amp::OpPolicy* policy) override { model_->set_op_policy(policy); }

  float train_step(const std::vector<std::size_t>& indices,
                   const Model::GradientReadyFn& on_gradient_ready, float loss_scale) override {
    gather(data_.train, indices, images_, labels_);
    return model_->forward_backward(images_.data(), labels_.data(), indices.size(),
                                    on_gradient_ready, loss_scale);
  }
  void evaluate_test(std::size_t begin, std::size_t end, double* loss_sum,
                     std::int64_t* correct) override {
    const Dataset& test = data_.test;
    model_->evaluate(test.images.data() + begin * test.features(), test.labels.data() + begin,
                     end - begin, loss_sum, correct);
  }

  std::vector<float> parameters() const override {
    const float* p = model_->parameter_buffer();
    return std::vector<float>(p, p + model_->num_parameters());
  }
  void set_parameters(const float* values) override {
    std::copy(values, values + model_->num_parameters(), model_->parameter_buffer());
  }

 private:
  std::unique_ptr<Model> model_;
  const FashionMnist& data_;
  kernels::Stream host_ = kernels::Stream::host();
  std::vector<float> images_;
  std::vector<std::uint8_t> labels_;
};

// A data set's images and labels in the stream's memory.
struct DeviceDataset {
  kernels::Buffer<float> images;
  kernels::Buffer<std::uint8_t> labels;
  std::size_t features = 0;

  DeviceDataset(const Dataset& d, const kernels::Stream& s)
      : images(d.images.size(), s), labels(d.labels.size(), s), features(d.features()) {
    kernels::copy_bytes(images.data(), d.images.data(), d.images.size() * sizeof(float), s);
    kernels::copy_bytes(labels.data(), d.labels.data(), d.labels.size(), s);
  }
};

class DeviceTrainingModel final : public TrainingModel {
 public:
  DeviceTrainingModel(std::unique_ptr<Model> cpu, const FashionMnist& data,
                      const kernels::Stream& stream)
      : description_(cpu->describe()),
        model_(*cpu, stream),
        train_(data.train, stream),
        test_(data.test, stream) {
    stream.synchronize();  // the host's copies may go away after this
  }

  std::string describe() const override { return description_; }
  std::size_t num_parameters() const override { return model_.num_parameters(); }
  const kernels::Stream& stream() const override { return model_.stream(); }
  std::vector<ParameterSpec> parameter_specs() const override {
    return specs_of(model_.parameters());
  }
  void bind_gradients(const std::vector<float*>& grads) override { model_.bind_gradients(grads); }
  void set_op_policy(const amp::OpPolicy* policy) override { model_.set_op_policy(policy); }
  std::pair<std::int64_t, std::int64_t> products() const override {
    return {model_.fp16_products(), model_.fp32_products()};
  }

  float train_step(const std::vector<std::size_t>& indices,
                   const Model::GradientReadyFn& on_gradient_ready, float loss_scale) override {
    const kernels::Stream& s = model_.stream();
    const std::size_t n = indices.size();
    std::uint64_t* host = host_indices_.reserve_discard(n);
    std::copy(indices.begin(), indices.end(), host);
    std::uint64_t* rows = indices_.reserve_discard(n, s);
    kernels::copy_bytes(rows, host, n * sizeof(std::uint64_t), s);
    float* images = images_.reserve_discard(n * train_.features, s);
    std::uint8_t* labels = labels_.reserve_discard(n, s);
    kernels::gather_rows(train_.images.data(), train_.features, rows, n, images, s);
    kernels::gather_bytes(train_.labels.data(), rows, n, labels, s);
    // forward_backward waits for the stream before it returns: the pinned indices are free again.
    return model_.forward_backward(images, labels, n, on_gradient_ready, loss_scale);
  }
  void evaluate_test(std::size_t begin, std::size_t end, double* loss_sum,
                     std::int64_t* correct) override {
    model_.evaluate(test_.images.data() + begin * test_.features, test_.labels.data() + begin,
                    end - begin, loss_sum, correct);
  }

  std::vector<float> parameters() const override {
    std::vector<float> out(model_.num_parameters());
    kernels::copy_bytes(out.data(), model_.parameter_buffer(), out.size() * sizeof(float),
                        model_.stream());
    model_.stream().synchronize();
    return out;
  }
  void set_parameters(const float* values) override {
    kernels::copy_bytes(model_.parameter_buffer(), values, model_.num_parameters() * sizeof(float),
                        model_.stream());
    model_.stream().synchronize();
  }

 private:
  std::string description_;
  gpu::DeviceModel model_;
  DeviceDataset train_, test_;
  kernels::PinnedBuffer<std::uint64_t> host_indices_;
  kernels::Buffer<std::uint64_t> indices_;
  kernels::Buffer<float> images_;
  kernels::Buffer<std::uint8_t> labels_;
};

}  // namespace

void check_device_usable() {
  if (!GRADWIRE_HAVE_CUDA) {
    throw DeviceError(
        "--device cuda: this gradwire_train was built without CUDA (CMake found no nvcc); "
        "rebuild with the CUDA toolkit, or train with --device cpu");
  }
  if (!kernels::cuda_device_available()) {
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    throw DeviceError(std::string("--device cuda: no usable CUDA device here (the CUDA runtime "
                                  "reports none") +
                      (visible ? std::string("; CUDA_VISIBLE_DEVICES='") + visible + "'" : "") +
                      "); train with --device cpu");
  }
}

std::unique_ptr<TrainingModel> make_training_model(const std::string& kind, std::uint64_t seed,
                                                   const FashionMnist& data,
                                                   const kernels::Stream& stream) {
  if (!stream.is_host()) return make_device_training_model(kind, seed, data, stream);
  return std::make_unique<HostTrainingModel>(make_model(kind, seed), data);
}

std::unique_ptr<TrainingModel> make_device_training_model(const std::string& kind,
                                                          std::uint64_t seed,
                                                          const FashionMnist& data,
                                                          const kernels::Stream& stream) {
  return std::make_unique<DeviceTrainingModel>(make_model(kind, seed), data, stream);
}

}  // namespace gw::trainer
