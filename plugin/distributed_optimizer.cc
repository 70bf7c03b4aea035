#include "plugin/distributed_optimizer.h"

#include <chrono>
#include <cstring>
#include <set>
#include <stdexcept>

#include "kernels/elementwise.h"
#include "plugin/config/params.h"
#include "plugin/config_check.h"

namespace gw {

DistributedOptimizer::DistributedOptimizer(std::shared_ptr<CountingCommunicator> comm,
                                           std::unique_ptr<Optimizer> inner,
                                           std::vector<ParameterSpec> params, Options options)
    : comm_(std::move(comm)),
      inner_(std::move(inner)),
      config_(std::move(options.config)),
      log_(LogLevel::kInfo, 0) {
  // Everything local is validated before the first collective.
  if (options.read_environment) config_.apply_process_environment();
  if (!comm_) throw std::invalid_argument("DistributedOptimizer: communicator is null");
  log_ = Logger(parse_log_level(config_.get_string(config::keys::kLogLevel)), comm_->rank());
  if (!inner_) throw std::invalid_argument("DistributedOptimizer: inner optimizer is null");
  if (params.empty()) throw std::invalid_argument("DistributedOptimizer: no parameters");
  average_ = config_.get_string(config::keys::kGradientReduction) == "average";

  std::set<std::string> names;
  std::size_t offset = 0;
  for (auto& p : params) {
    if (p.value == nullptr || p.numel == 0) {
      throw std::invalid_argument("DistributedOptimizer: parameter '" + p.name +
                                  "' has no values (null pointer or zero elements)");
    }
    if (!names.insert(p.name).second) {
      throw std::invalid_argument("DistributedOptimizer: parameter name '" + p.name +
                                  "' registered twice");
    }
    params_.push_back(Registered{std::move(p), offset});
    offset += params_.back().spec.numel;
  }
  flat_gradients_.assign(offset, 0.0f);
  ready_.assign(params_.size(), 0);
  views_.reserve(params_.size());
  for (const auto& p : params_) {
    views_.push_back(
        ParameterView{p.spec.name, p.spec.value, flat_gradients_.data() + p.offset, p.spec.numel});
  }

  check_same_on_all_ranks(*comm_, config_.canonical() + layout_canonical());
  if (config_.get_bool(config::keys::kBroadcastParameters)) broadcast_parameters();
  if (comm_->rank() == 0) {
    log_.log(LogLevel::kInfo,
             "%zu parameters (%zu floats, %.2f MB) in one flat gradient buffer; %d ranks; "
             "inner optimizer %s; gradients %s over ranks",
             params_.size(), flat_gradients_.size(), flat_gradients_.size() * 4 / 1e6,
             comm_->size(), inner_->name().c_str(), average_ ? "averaged" : "summed");
  }
}

std::string DistributedOptimizer::layout_canonical() const {
  // One line per parameter, so a mismatch names the parameter that differs.
  std::string out;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    out += "parameter[" + std::to_string(i) + "]=" + params_[i].spec.name + " (" +
           std::to_string(params_[i].spec.numel) + " elements)\n";
  }
  out += "parameters=" + std::to_string(params_.size()) + "\n";
  return out;
}

float* DistributedOptimizer::gradient(std::size_t i) {
  if (i >= params_.size()) {
    throw std::out_of_range("DistributedOptimizer::gradient: parameter index " + std::to_string(i) +
                            " of " + std::to_string(params_.size()));
  }
  return flat_gradients_.data() + params_[i].offset;
}

std::vector<float*> DistributedOptimizer::gradient_views() {
  std::vector<float*> out;
  out.reserve(params_.size());
  for (std::size_t i = 0; i < params_.size(); ++i) out.push_back(gradient(i));
  return out;
}

void DistributedOptimizer::gradient_ready(std::size_t i) {
  if (i >= params_.size()) {
    throw std::logic_error("gradient_ready: parameter index " + std::to_string(i) + " of " +
                           std::to_string(params_.size()));
  }
  if (ready_[i]) {
    throw std::logic_error("gradient_ready: parameter '" + params_[i].spec.name +
                           "' reported ready twice in step " + std::to_string(steps_));
  }
  ready_[i] = 1;
  ++ready_count_;
}

void DistributedOptimizer::exchange_gradients() {
  if (ready_count_ != 0 && ready_count_ != params_.size()) {
    std::string missing;
    for (std::size_t i = 0; i < params_.size(); ++i) {
      if (!ready_[i]) missing += (missing.empty() ? "" : ", ") + params_[i].spec.name;
    }
    throw std::logic_error("step " + std::to_string(steps_) +
                           ": gradient_ready was not called for: " + missing);
  }
  const bool debug = log_.enabled(LogLevel::kDebug);
  const auto start =
      debug ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
  comm_->allreduce(flat_gradients_.data(), flat_gradients_.size(), DataType::kFloat32,
                   ReduceOp::kSum, TrafficKind::kGradient);
  if (debug) {
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    log_.log(LogLevel::kDebug, "step %lld: allreduce of %zu floats took %.3f ms",
             static_cast<long long>(steps_), flat_gradients_.size(), ms);
  }
  std::fill(ready_.begin(), ready_.end(), 0);
  ready_count_ = 0;
}

void DistributedOptimizer::synchronize_gradients() {
  exchange_gradients();
  if (average_ && comm_->size() > 1) {
    kernels::scale(flat_gradients_.data(), 1.0f / static_cast<float>(comm_->size()),
                   flat_gradients_.size(), Device::kHost);
  }
}

void DistributedOptimizer::step() {
  // See Note [Who divides by the world size].
  float grad_scale = 1.0f;
  if (average_ && comm_->size() > 1 && inner_->accepts_gradient_scale()) {
    exchange_gradients();
    grad_scale = 1.0f / static_cast<float>(comm_->size());
  } else {
    synchronize_gradients();
  }
  for (auto& v : views_) v.grad_scale = grad_scale;
  inner_->step(views_);
  ++steps_;
}

void DistributedOptimizer::broadcast_parameters() {
  // One collective for all parameters: pack, broadcast, unpack.
  std::vector<float> staging(flat_gradients_.size());
  for (const auto& p : params_) {
    std::memcpy(staging.data() + p.offset, p.spec.value, p.spec.numel * sizeof(float));
  }
  comm_->broadcast(staging.data(), staging.size(), DataType::kFloat32, 0, TrafficKind::kParameter);
  for (const auto& p : params_) {
    std::memcpy(p.spec.value, staging.data() + p.offset, p.spec.numel * sizeof(float));
  }
}

}  // namespace gw
