#include "reference_trainer/nn/model.h"

#include <algorithm>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "reference_trainer/nn/parameter_init.h"

namespace gw::trainer {

Model::Model(std::string kind, const Shape& sample_shape, std::vector<ModelLayer> layers,
             std::uint64_t seed)
    : kind_(std::move(kind)), sample_shape_(sample_shape), layers_(std::move(layers)) {
  if (sample_shape_.rank() == 0 || sample_shape_.rank() >= Shape::kMaxRank ||
      sample_shape_.numel() == 0) {
    throw std::invalid_argument("Model '" + kind_ + "': bad sample shape " +
                                sample_shape_.to_string());
  }
  if (layers_.empty()) throw std::invalid_argument("Model '" + kind_ + "': no layers");
  std::set<std::string> names;
  std::size_t total = 0;
  for (const ModelLayer& l : layers_) {
    if (!l.layer || l.name.empty() || !names.insert(l.name).second) {
      throw std::invalid_argument("Model '" + kind_ + "': layer '" + l.name +
                                  "' is null, unnamed or named twice");
    }
    first_param_.push_back(params_.size());
    for (const LayerParameter& p : l.layer->parameters()) {
      params_.push_back(Parameter{l.name + "." + p.name, nullptr, p.numel, p.rows});
      total += p.numel;
    }
  }
  values_.assign(total, 0.0f);
  own_grads_.assign(total, 0.0f);

  std::mt19937_64 rng(seed);
  std::size_t offset = 0;
  std::size_t index = 0;
  for (ModelLayer& l : layers_) {
    const std::vector<LayerParameter>& lp = l.layer->parameters();
    for (std::size_t j = 0; j < lp.size(); ++j, ++index) {
      float* value = values_.data() + offset;
      l.layer->bind_value(j, value);
      l.layer->bind_gradient(j, own_grads_.data() + offset);
      params_[index].value = value;
      grads_.push_back(own_grads_.data() + offset);
      if (lp[j].init == ParameterInit::kKaimingUniform) {
        kaiming_uniform(value, lp[j].numel, lp[j].fan_in, rng);
      }
      offset += lp[j].numel;
    }
  }

  activations_.resize(layers_.size() + 1);
  const std::vector<float> probe(sample_shape_.numel(), 0.0f);
  const Tensor& logits = run_forward(probe.data(), 1, false);
  if (logits.shape().rank() != 2 || logits.dim(1) == 0 || logits.dim(1) > 256) {
    throw std::invalid_argument("Model '" + kind_ + "': the last layer must give logits [N, " +
                                "1..256 classes], got " + logits.shape().to_string());
  }
  num_classes_ = logits.dim(1);
}

std::string Model::describe() const {
  std::string s = kind_ + ":";
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    s += (i == 0 ? " " : ", ") + layers_[i].name + "=" + layers_[i].layer->describe();
  }
  return s + " | " + std::to_string(num_parameters()) + " parameters";
}

void check_gradient_views(const std::vector<Model::Parameter>& params,
                          const std::vector<float*>& grads, const char* who) {
  if (grads.size() != params.size()) {
    throw std::invalid_argument(std::string(who) + ": got " + std::to_string(grads.size()) +
                                " gradient views for " + std::to_string(params.size()) +
                                " parameters");
  }
  for (std::size_t i = 0; i < grads.size(); ++i) {
    if (grads[i] == nullptr) {
      throw std::invalid_argument(std::string(who) + ": null view for " + params[i].name);
    }
  }
}

void Model::bind_gradients(const std::vector<float*>& grads) {
  check_gradient_views(params_, grads, "Model::bind_gradients");
  std::size_t index = 0;
  for (ModelLayer& l : layers_) {
    for (std::size_t j = 0; j < l.layer->parameters().size(); ++j) {
      l.layer->bind_gradient(j, grads[index++]);
    }
  }
  grads_ = grads;
}

void Model::check_batch(const float* images, const std::uint8_t* labels, std::size_t batch,
                        const char* who) const {
  if (batch == 0) throw std::invalid_argument(std::string("Model::") + who + ": empty batch");
  if (images == nullptr || labels == nullptr) {
    throw std::invalid_argument(std::string("Model::") + who + ": null images or labels");
  }
}

const Tensor& Model::run_forward(const float* images, std::size_t batch, bool training) {
  Tensor& input = activations_[0];
  input.resize(sample_shape_.with_batch(batch), DType::kFloat32);
  std::copy(images, images + input.numel(), input.data());
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    layers_[i].layer->forward(activations_[i], activations_[i + 1], training);
  }
  return activations_.back();
}

void Model::set_op_policy(const amp::OpPolicy* policy) {
  if (policy != nullptr) {
    for (const std::string& op : op_names()) policy->list_of(op);  // throws on an unknown op
  }
  for (ModelLayer& l : layers_) l.layer->set_op_policy(policy);
  loss_.set_op_policy(policy);
}

std::vector<std::string> Model::op_names() const {
  std::vector<std::string> ops;
  for (const ModelLayer& l : layers_) ops.emplace_back(l.layer->op_name());
  ops.emplace_back(SoftmaxCrossEntropy::kOpName);
  return ops;
}

std::vector<amp::Precision> Model::precisions() const {
  std::vector<amp::Precision> out;
  for (const ModelLayer& l : layers_) out.push_back(l.layer->precision());
  out.push_back(loss_.precision());
  return out;
}

float Model::forward_backward(const float* images, const std::uint8_t* labels, std::size_t batch,
                              const GradientReadyFn& on_gradient_ready, float loss_scale) {
  check_batch(images, labels, batch, "forward_backward");
  const float loss = loss_.forward(run_forward(images, batch, true), labels);
  Tensor* grad_out = &grad_a_;
  Tensor* grad_in = &grad_b_;
  loss_.backward(*grad_out, loss_scale);
  for (std::size_t i = layers_.size(); i-- > 0;) {
    layers_[i].layer->backward(*grad_out, i == 0 ? nullptr : grad_in);
    if (on_gradient_ready) {
      for (std::size_t k = layers_[i].layer->parameters().size(); k-- > 0;) {
        on_gradient_ready(first_param_[i] + k);
      }
    }
    std::swap(grad_out, grad_in);
  }
  return loss;
}

void Model::evaluate(const float* images, const std::uint8_t* labels, std::size_t batch,
                     double* loss_sum, std::int64_t* correct) {
  check_batch(images, labels, batch, "evaluate");
  const Tensor& logits = run_forward(images, batch, false);
  loss_.forward(logits, labels);
  if (loss_sum != nullptr) *loss_sum += loss_.loss_sum();
  if (correct != nullptr) *correct += SoftmaxCrossEntropy::count_correct(logits, labels);
}

}  // namespace gw::trainer
