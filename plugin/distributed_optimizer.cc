#include "plugin/distributed_optimizer.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <istream>
#include <ostream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "kernels/elementwise.h"
#include "plugin/compressor_factory.h"
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
  CompressorSettings compression = read_compressor_settings(config_);
  compression.sparsify.dense_fallback = options.sparse_dense_fallback;

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
  multiplier_.assign(params_.size(), 1.0f);
  views_.reserve(params_.size());
  bucket_.data = flat_gradients_.data();
  bucket_.numel = flat_gradients_.size();
  std::vector<std::size_t> numels;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Registered& p = params_[i];
    views_.push_back(
        ParameterView{p.spec.name, p.spec.value, flat_gradients_.data() + p.offset, p.spec.numel});
    bucket_.tensors.push_back({i, p.offset, p.spec.numel});
    numels.push_back(p.spec.numel);
  }
  compressor_ = make_compressor(compression, std::move(numels), *inner_);
  stats_.compressor = compressor_->name();
  stats_.warmup_end_step = compressor_->warmup_end_step();
  measure_from_step_ = stats_.warmup_end_step;
  stats_.dense_bytes_per_step = CountingCommunicator::allreduce_bytes(
      flat_gradients_.size(), sizeof(float), comm_->rank(), comm_->size());

  check_same_on_all_ranks(*comm_, config_.canonical() + layout_canonical());
  if (config_.get_bool(config::keys::kBroadcastParameters)) broadcast_parameters();
  if (comm_->rank() == 0) {
    log_.log(LogLevel::kInfo,
             "%zu parameters (%zu floats, %.2f MB) in one flat gradient buffer; %d ranks; "
             "inner optimizer %s; compressor %s; gradients %s over ranks",
             params_.size(), flat_gradients_.size(), flat_gradients_.size() * 4 / 1e6,
             comm_->size(), inner_->name().c_str(), compressor_->name().c_str(),
             average_ ? "averaged" : "summed");
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
  compressor_->begin_step(steps_);
  if (steps_ == measure_from_step_ && !synchronized_) {
    bytes_at_warmup_end_ = comm_->counters()[TrafficKind::kGradient].sent_bytes;
  }
  const compressors::ExchangePlan& plan = exchange_.run(*comm_, *compressor_, bucket_);
  const float inv_n = 1.0f / static_cast<float>(comm_->size());
  const bool average_wire = plan.dense_wire == compressors::DenseWire::kFloat16;
  for (std::size_t pos : plan.dense) {
    multiplier_[bucket_.tensors[pos].parameter] = average_wire ? inv_n : 1.0f;
  }
  for (std::size_t pos : plan.sparse) multiplier_[bucket_.tensors[pos].parameter] = 1.0f;
  if (!plan.sparse.empty()) ++stats_.sparse_exchanges;
  if (plan.dense_fallback) ++stats_.dense_fallbacks;
  if (debug) {
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    log_.log(LogLevel::kDebug,
             "step %lld: %s exchange of %zu floats took %.3f ms (%zu dense, %zu sparse tensors%s)",
             static_cast<long long>(steps_), compressor_->name().c_str(), flat_gradients_.size(),
             ms, plan.dense.size(), plan.sparse.size(),
             plan.dense_fallback ? ", dense fallback" : "");
  }
  std::fill(ready_.begin(), ready_.end(), 0);
  ready_count_ = 0;
}

float DistributedOptimizer::needed_scale(std::size_t i) const {
  // See Note [Who divides by the world size].
  const float target = average_ ? 1.0f / static_cast<float>(comm_->size()) : 1.0f;
  return multiplier_[i] == target ? 1.0f : target / multiplier_[i];
}

void DistributedOptimizer::synchronize_gradients() {
  exchange_gradients();
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const float scale = needed_scale(i);
    if (scale != 1.0f) {
      kernels::scale(flat_gradients_.data() + params_[i].offset, scale, params_[i].spec.numel,
                     Device::kHost);
    }
    multiplier_[i] = average_ ? 1.0f / static_cast<float>(comm_->size()) : 1.0f;
  }
  synchronized_ = true;
}

void DistributedOptimizer::step() {
  if (!synchronized_) {
    if (inner_->accepts_gradient_scale()) {
      exchange_gradients();
    } else {
      synchronize_gradients();
    }
  }
  for (std::size_t i = 0; i < views_.size(); ++i) views_[i].grad_scale = needed_scale(i);
  inner_->step(views_);
  synchronized_ = false;
  ++steps_;
  if (steps_ > measure_from_step_) {
    stats_.steps_after_warmup = steps_ - measure_from_step_;
    stats_.gradient_bytes_after_warmup =
        comm_->counters()[TrafficKind::kGradient].sent_bytes - bytes_at_warmup_end_;
  }
}

namespace {
constexpr char kStateMagic[8] = {'G', 'W', 'D', 'O', 'P', 'T', '1', '\0'};
}  // namespace

void DistributedOptimizer::save_state(std::ostream& out) const {
  out.write(kStateMagic, sizeof kStateMagic);
  const std::int64_t steps = steps_;
  out.write(reinterpret_cast<const char*>(&steps), sizeof steps);
  compressor_->save_state(out);
  inner_->save_state(out);
  if (!out) throw std::runtime_error("DistributedOptimizer::save_state: error while writing");
}

void DistributedOptimizer::load_state(std::istream& in) {
  char magic[8];
  std::int64_t steps = 0;
  in.read(magic, sizeof magic);
  in.read(reinterpret_cast<char*>(&steps), sizeof steps);
  if (!in || std::memcmp(magic, kStateMagic, sizeof magic) != 0 || steps < 0) {
    throw std::runtime_error("DistributedOptimizer::load_state: not a gradwire optimizer state");
  }
  // The compressor's load is all-or-nothing, and so is the inner optimizer's; keep a copy so that
  // a failure in the second leaves the first as it was too.
  std::stringstream before;
  compressor_->save_state(before);
  compressor_->load_state(in);
  try {
    inner_->load_state(in);
  } catch (...) {
    compressor_->load_state(before);
    throw;
  }
  steps_ = steps;
  // Per-step figures of a resumed run start at the resume point.
  measure_from_step_ = std::max(stats_.warmup_end_step, steps_);
  stats_.steps_after_warmup = 0;
  stats_.gradient_bytes_after_warmup = 0;
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
