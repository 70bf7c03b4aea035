#include "reference_trainer/gpu/device_model.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/nn.h"
#include "reference_trainer/gpu/device_layer.h"
#include "reference_trainer/nn/softmax_cross_entropy.h"

namespace gw::trainer::gpu {

using kernels::Stream;

DeviceModel::DeviceModel(const Model& model, const Stream& stream)
    : stream_(stream),
      kind_(model.kind()),
      sample_shape_(model.sample_shape()),
      num_classes_(model.num_classes()),
      total_(model.num_parameters()),
      values_(model.num_parameters(), stream),
      own_grads_(model.num_parameters(), stream),
      products_(std::make_unique<Products>(stream)),
      loss_(stream, model.num_classes(), *products_) {
  kernels::copy_bytes(values_.data(), model.parameter_buffer(), total_ * sizeof(float), stream_);
  kernels::fill_zero(own_grads_.data(), total_ * sizeof(float), stream_);
  std::size_t offset = 0;
  for (const ModelLayer& l : model.layers()) {
    first_param_.push_back(params_.size());
    layers_.push_back(make_device_layer(l, *products_));
    DeviceLayer& layer = *layers_.back();
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
  for (auto& l : layers_) l->set_policy(policy);
  loss_.set_policy(policy);
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

float DeviceModel::forward_backward(const float* images, const std::uint8_t* labels,
                                    std::size_t batch, const GradientReadyFn& on_gradient_ready,
                                    float loss_scale) {
  loss_.check_labels(labels, batch, "forward_backward", /*read_from_device=*/false);
  const float* logits = run_forward(images, batch, true);
  loss_.forward(logits, logits_half_, labels, batch);
  float* grad_out = grad_a_.reserve_discard(batch * num_classes_, stream_);
  loss_.backward(labels, batch, loss_scale / static_cast<float>(batch), grad_out);
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
  return static_cast<float>(loss_.sum(batch) / static_cast<double>(batch));
}

void DeviceModel::evaluate(const float* images, const std::uint8_t* labels, std::size_t batch,
                           double* loss_sum_out, std::int64_t* correct) {
  loss_.check_labels(labels, batch, "evaluate", /*read_from_device=*/true);
  const float* logits = run_forward(images, batch, false);
  loss_.forward(logits, logits_half_, labels, batch);
  if (loss_sum_out != nullptr) *loss_sum_out += loss_.sum(batch);
  if (correct != nullptr) {
    *correct += static_cast<std::int64_t>(
        kernels::count_correct(logits, labels, batch, num_classes_, stream_));
  }
}

}  // namespace gw::trainer::gpu
