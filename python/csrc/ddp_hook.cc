#include "ddp_hook.h"

#include <stdexcept>
#include <utility>

#include "compressors/dgc_compressor.h"
#include "compressors/powersgd_compressor.h"
#include "compressors/topk_compressor.h"
#include "plugin/config/params.h"
#include "plugin/config/registry.h"
#include "plugin/config_check.h"
#include "process_group_communicator.h"
#include "saved_state.h"
#include "settings.h"

namespace gw::torch_bridge {
namespace {

// GRADWIRE_* settings the hook cannot honour, with what a PyTorch program uses instead. Any of
// them away from its default is a ConfigError: a setting that silently does nothing is worse
// than none (the fusion threshold, say, is DDP's bucket_cap_mb here).
const std::map<std::string, std::string>& unsupported() {
  static const std::map<std::string, std::string> kUnsupported = {
      {"GRADWIRE_FUSION_THRESHOLD_MB", "DDP's buckets are the hook's: set bucket_cap_mb"},
      {"GRADWIRE_AMP", "use torch.autocast and torch.amp.GradScaler"},
      {"GRADWIRE_HIERARCHICAL", "the process group's backend decides how a collective runs"},
      {"GRADWIRE_BACKEND", "the process group DDP uses carries the hook's collectives"},
      {"GRADWIRE_MPI_WAIT", "the hook runs no MPI"},
      {"GRADWIRE_TIMELINE", "use the PyTorch profiler"},
      {"GRADWIRE_GRADIENT_REDUCTION", "DDP averages; the hook returns the average"},
      {"GRADWIRE_BROADCAST_PARAMETERS", "DDP broadcasts the parameters at construction"},
  };
  return kUnsupported;
}

config::Config hook_config(const std::map<std::string, std::string>& settings) {
  config::Config c = settings_config(settings);
  const config::Config defaults;
  for (const auto& [key, instead] : unsupported()) {
    if (c.text(key) != defaults.text(key)) {
      throw config::ConfigError(key + "=" + c.text(key) +
                                " has no effect under gradwire's DDP hook (" + instead +
                                "); unset it");
    }
  }
  return c;
}

// The parameters' device, checked: the CPU, or a CUDA device this build and machine can use.
c10::Device parse_device(const std::string& text) {
  c10::Device device(c10::kCPU);
  try {
    device = c10::Device(text);
  } catch (const std::exception&) {
    throw std::invalid_argument("gradwire's DDP hook: device '" + text +
                                "' is not a device; accepted: cpu, cuda, cuda:N");
  }
  if (!device.is_cpu() && !device.is_cuda()) {
    throw std::invalid_argument(
        "gradwire's DDP hook runs on CPU or CUDA parameters; these are on " + device.str());
  }
  if (device.is_cuda() && !kernels::cuda_device_available()) {
    throw std::invalid_argument(
        "gradwire's DDP hook: the parameters are on " + device.str() +
        ", but this gradwire library has no usable CUDA device (built without CUDA, or no GPU "
        "found by its runtime); build it with CUDA (docs/PYTORCH.md) or train on the CPU");
  }
  return device;
}

std::vector<std::size_t> to_sizes(const std::vector<std::int64_t>& v, const char* what) {
  std::vector<std::size_t> out;
  out.reserve(v.size());
  for (std::int64_t x : v) {
    if (x < 0) throw std::invalid_argument(std::string(what) + ": a negative size");
    out.push_back(static_cast<std::size_t>(x));
  }
  return out;
}

std::string layout_text(const std::vector<std::size_t>& numels,
                        const std::vector<std::size_t>& rows) {
  std::string out;
  for (std::size_t i = 0; i < numels.size(); ++i) {
    out += "parameter[" + std::to_string(i) + "]=" + std::to_string(numels[i]) + " elements" +
           (rows[i] ? ", " + std::to_string(rows[i]) + " rows" : "") + "\n";
  }
  return out + "parameters=" + std::to_string(numels.size()) + "\n";
}

}  // namespace

DdpHook::DdpHook(c10::intrusive_ptr<c10d::ProcessGroup> group, std::vector<std::int64_t> numels,
                 std::vector<std::int64_t> rows, const std::map<std::string, std::string>& settings,
                 double momentum, bool nesterov, const std::string& device)
    : config_(hook_config(settings)),
      settings_(read_compressor_settings(config_)),
      device_(parse_device(device)),
      numels_(to_sizes(numels, "numels")),
      rows_(to_sizes(rows, "rows")) {
  if (settings_.automatic) {
    throw config::ConfigError(std::string(config::keys::kCompressor) +
                              "=auto is not available in gradwire's DDP hook: name a compressor "
                              "(none, fp16, topk, dgc, powersgd)");
  }
  if (numels_.size() != rows_.size()) {
    throw std::invalid_argument("DdpHook: numels and rows differ in length");
  }
  for (std::size_t i = 0; i < numels_.size(); ++i) {
    if (rows_[i] != 0 && numels_[i] % rows_[i] != 0) {
      throw std::invalid_argument("DdpHook: parameter " + std::to_string(i) + "'s rows (" +
                                  std::to_string(rows_[i]) + ") do not divide its " +
                                  std::to_string(numels_[i]) + " elements");
    }
  }
  if (!(momentum >= 0.0 && momentum < 1.0)) {
    throw config::ConfigError("momentum=" + std::to_string(momentum) +
                              ": dgc's momentum must lie in [0, 1)");
  }
  auto on_group = std::make_unique<ProcessGroupCommunicator>(std::move(group), device_);
  ProcessGroupCommunicator& group_comm = *on_group;
  comm_ = std::make_unique<CountingCommunicator>(std::move(on_group));
  check_same_on_all_ranks(*comm_, config_.canonical() + "momentum=" + std::to_string(momentum) +
                                      "\nnesterov=" + (nesterov ? "1" : "0") + "\n" +
                                      layout_text(numels_, rows_));
  compressor_ = make_trial_compressor(settings_, numels_, rows_, SgdMomentum{momentum, nesterov});
  if (device_.is_cuda()) {
    stream_ = kernels::Stream::cuda(device_.has_index() ? device_.index() : -1);
    compressor_->set_stream(stream_);
    group_comm.order_on(stream_);
  }
}

DdpHook::Bucket& DdpHook::bucket_for(const std::vector<std::int64_t>& parameters) {
  auto found = buckets_.find(parameters);
  if (found != buckets_.end()) return found->second;
  Bucket b;
  compressors::BucketView& v = b.view;
  v.index = buckets_.size();
  std::string text = "bucket[" + std::to_string(v.index) + "]=";
  for (std::int64_t p : parameters) {
    if (p < 0 || static_cast<std::size_t>(p) >= numels_.size()) {
      throw std::invalid_argument("DdpHook: parameter index " + std::to_string(p) +
                                  " is not one of the model's " + std::to_string(numels_.size()));
    }
    v.tensors.push_back({static_cast<std::size_t>(p), v.numel, numels_[p]});
    v.numel += numels_[p];
    text += std::to_string(p) + " ";
  }
  // Every rank meets a new composition at the same bucket of the same step; they must agree.
  check_same_on_all_ranks(*comm_, text + "\n");
  b.exchange = std::make_unique<BucketExchange>();
  return buckets_.emplace(parameters, std::move(b)).first->second;
}

void DdpHook::exchange(const at::Tensor& buffer, const std::vector<std::int64_t>& parameters,
                       bool last) {
  const bool here = device_.is_cpu()
                        ? buffer.is_cpu()
                        : buffer.is_cuda() &&
                              (!device_.has_index() || buffer.device().index() == device_.index());
  if (buffer.scalar_type() != at::kFloat || !buffer.is_contiguous() || !here) {
    throw std::invalid_argument("gradwire's DDP hook (made for parameters on " + device_.str() +
                                ") takes contiguous float32 buckets there; got a " +
                                std::string(buffer.is_contiguous() ? "" : "non-contiguous ") +
                                c10::toString(buffer.scalar_type()) + " bucket on " +
                                buffer.device().str());
  }
  Bucket& b = bucket_for(parameters);
  compressors::BucketView& view = b.view;
  if (static_cast<std::size_t>(buffer.numel()) != view.numel) {
    throw std::invalid_argument("gradwire's DDP hook: bucket " + std::to_string(view.index) +
                                " holds " + std::to_string(buffer.numel()) +
                                " elements, but its parameters have " + std::to_string(view.numel));
  }
  if (!in_step_) {
    compressor_->begin_step(step_);
    in_step_ = true;
  }
  view.data = buffer.data_ptr<float>();
  // Under none the bucket is scaled by 1/n first and summed in place, DDP's own order
  // (Note [The DDP hook's state]); a compressor sees the gradients themselves.
  // On one rank the sum is the average: no division (x / 1 and x * 1 are x, so the bits agree).
  const bool none = compressor_->kind() == compressors::Kind::kNone;
  const bool alone = comm_->size() == 1;
  if (none && !alone) buffer.mul_(1.0 / comm_->size());
  const compressors::ExchangePlan& plan = b.exchange->run(*comm_, *compressor_, view);
  if (none || alone) {
    if (last) end_step();
    return;
  }
  auto average = [&](std::size_t pos) {
    const compressors::TensorSlot& t = view.tensors[pos];
    buffer.narrow(0, static_cast<std::int64_t>(t.offset), static_cast<std::int64_t>(t.numel))
        .div_(comm_->size());
  };
  if (plan.dense_wire == compressors::DenseWire::kFloat32) {
    for (std::size_t pos : plan.dense) average(pos);
  }
  for (std::size_t pos : plan.sparse) average(pos);
  for (std::size_t pos : plan.low_rank) average(pos);
  if (last) end_step();
}

std::uint64_t DdpHook::gradient_bytes_sent() const {
  return comm_->counters()[TrafficKind::kGradient].sent_bytes;
}

std::vector<float> DdpHook::kept(std::int64_t p) const {
  if (p < 0 || static_cast<std::size_t>(p) >= numels_.size()) {
    throw std::invalid_argument("kept: no parameter " + std::to_string(p));
  }
  const auto i = static_cast<std::size_t>(p);
  if (auto* t = dynamic_cast<const compressors::TopkCompressor*>(compressor_.get())) {
    return t->residual(i);
  }
  if (auto* d = dynamic_cast<const compressors::DgcCompressor*>(compressor_.get())) {
    return d->accumulator(i);
  }
  if (auto* s = dynamic_cast<const compressors::PowerSgdCompressor*>(compressor_.get())) {
    return s->residual(i);
  }
  return {};
}

// Note [Strings across the bridge]: the compressor's bytes come from the library as a string.
std::string DdpHook::save_state() const {
  return "gradwire-ddp-hook 1\n" + compressor_->name() + "\n" + std::to_string(step_) + "\n" +
         compressors::state_bytes(*compressor_);
}

void DdpHook::load_state(const std::string& bytes) {
  const SavedState saved = split_saved_state(bytes, 3, "gradwire-ddp-hook 1", "DDP hook");
  const std::int64_t step = saved_step(saved.lines[2], "DDP hook");
  const std::string& name = saved.lines[1];
  if (name != compressor_->name()) {
    throw std::runtime_error("load_state_dict: the state is " + name + "'s, this hook runs " +
                             compressor_->name());
  }
  compressors::load_state_bytes(*compressor_, saved.body);
  step_ = step;
  in_step_ = false;
}

}  // namespace gw::torch_bridge
