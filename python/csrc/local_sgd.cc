#include "local_sgd.h"

#include <stdexcept>
#include <utility>

#include "plugin/config/config.h"
#include "plugin/config/params.h"
#include "plugin/config/registry.h"
#include "plugin/config_check.h"
#include "plugin/sync_settings.h"
#include "process_group_communicator.h"
#include "saved_state.h"
#include "settings.h"

namespace gw::torch_bridge {
namespace {

sync_policies::SyncOptions local_options(const config::Config& c) {
  const SyncSettings s = read_sync_settings(c);
  if (s.policy.mode == sync_policies::SyncMode::kDiloco) {
    throw config::ConfigError(std::string(config::keys::kSync) +
                              "=diloco is not in gradwire.torch.LocalSGD yet (it averages "
                              "parameters; DiLoCo's outer step and compressed pseudo-gradients "
                              "are the C++ DistributedOptimizer's): use local_sgd, "
                              "post_local_sgd or adaptive_local_sgd");
  }
  if (s.automatic || s.policy.mode == sync_policies::SyncMode::kEveryStep) {
    throw config::ConfigError(std::string(config::keys::kSync) + "=" + c.text(config::keys::kSync) +
                              ": gradwire.torch.LocalSGD runs a local schedule: local_sgd, "
                              "post_local_sgd or adaptive_local_sgd");
  }
  if (s.average_state) {
    throw config::ConfigError(std::string(config::keys::kLocalSgdAverageState) +
                              "=1 has no effect under gradwire.torch.LocalSGD (it averages the "
                              "parameters; average the optimizer's state yourself); unset it");
  }
  return s.policy;
}

}  // namespace

LocalSgd::LocalSgd(c10::intrusive_ptr<c10d::ProcessGroup> group,
                   const std::map<std::string, std::string>& settings)
    : policy_([&] {
        const config::Config c = settings_config(settings);
        config_text_ = c.canonical();
        return local_options(c);
      }()) {
  comm_ = std::make_unique<CountingCommunicator>(
      std::make_unique<ProcessGroupCommunicator>(std::move(group), c10::Device(c10::kCPU)));
  check_same_on_all_ranks(*comm_, config_text_);
}

bool LocalSgd::after_step(const std::vector<at::Tensor>& parameters, double loss, double lr) {
  const std::int64_t step = step_++;
  if (!policy_.averages_after(step)) return false;
  std::vector<at::Tensor> flat_parts;
  for (const at::Tensor& p : parameters) {
    if (p.scalar_type() != at::kFloat || !p.is_cpu()) {
      throw std::invalid_argument("gradwire.torch.LocalSGD averages float32 CPU parameters; got " +
                                  std::string(c10::toString(p.scalar_type())) + " on " +
                                  p.device().str());
    }
    flat_parts.push_back(p.detach().reshape({-1}));
  }
  at::Tensor flat = at::cat(flat_parts).contiguous();
  double mean_loss[1] = {loss};
  if (policy_.needs_loss()) {
    comm_->allreduce(mean_loss, 1, DataType::kFloat64, ReduceOp::kSum, TrafficKind::kControl);
    mean_loss[0] /= comm_->size();
  }
  comm_->allreduce(flat.data_ptr<float>(), static_cast<std::size_t>(flat.numel()),
                   DataType::kFloat32, ReduceOp::kSum, TrafficKind::kParameter);
  flat.div_(comm_->size());
  std::int64_t offset = 0;
  for (const at::Tensor& p : parameters) {
    at::NoGradGuard no_grad;
    p.copy_(flat.narrow(0, offset, p.numel()).view(p.sizes()));
    offset += p.numel();
  }
  policy_.averaged(step, policy_.needs_loss() ? mean_loss[0] : 1.0, lr);
  return true;
}

std::uint64_t LocalSgd::parameter_bytes_sent() const {
  return comm_->counters()[TrafficKind::kParameter].sent_bytes;
}

// Note [Strings across the bridge]: the policy's bytes come from the library as a string.
std::string LocalSgd::save_state() const {
  return "gradwire-local-sgd 1\n" + std::to_string(step_) + "\n" + policy_.state_bytes();
}

void LocalSgd::load_state(const std::string& bytes) {
  const SavedState saved = split_saved_state(bytes, 2, "gradwire-local-sgd 1", "LocalSGD");
  const std::int64_t step = saved_step(saved.lines[1], "LocalSGD");
  policy_.load_state_bytes(saved.body);
  step_ = step;
}

}  // namespace gw::torch_bridge
