// gradwire's local SGD schedules (sync_policies/, GRADWIRE_SYNC: local_sgd, post_local_sgd,
// adaptive_local_sgd) for a PyTorch program (gradwire.torch.LocalSGD): whether a step exchanges
// gradients, and after which steps the ranks average their parameters, on the process group DDP
// uses, counted as parameter traffic.
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "plugin/comm/counting_communicator.h"
#include "sync_policies/sync_policy.h"

namespace gw::torch_bridge {

class LocalSgd {
 public:
  // `settings`: GRADWIRE_* values over the environment's. GRADWIRE_SYNC must name a local
  // schedule. Collective: the ranks' configurations must agree.
  LocalSgd(c10::intrusive_ptr<c10d::ProcessGroup> group,
           const std::map<std::string, std::string>& settings);

  std::int64_t step() const { return step_; }
  std::int64_t period() const { return policy_.period(); }
  std::string mode() const { return policy_.name(); }
  // Whether the current step averages gradients over ranks (before post_local_sgd's begin step).
  bool exchanges_gradients() const { return policy_.exchanges_gradients(step_); }
  // After the optimizer's update of the current step: averages `parameters` over ranks where the
  // schedule says so (returns true then), and moves to the next step. `loss`: this rank's mean
  // training loss since the previous call that averaged (adaptive_local_sgd's input; averaged over
  // ranks here); `lr`: the learning rate now. Collective.
  bool after_step(const std::vector<at::Tensor>& parameters, double loss, double lr);
  std::uint64_t parameter_bytes_sent() const;

  std::string save_state() const;
  void load_state(const std::string& bytes);

 private:
  std::string config_text_;  // the configuration the ranks compare (set before policy_)
  sync_policies::SyncPolicy policy_;
  std::unique_ptr<CountingCommunicator> comm_;
  std::int64_t step_ = 0;
};

}  // namespace gw::torch_bridge
