// Reads GRADWIRE_SYNC and the local SGD parameters into a SyncPolicy's options, and refuses the
// combinations that make no sense.
#pragma once

#include <cstdint>

#include "kernels/outer_rule.h"
#include "plugin/config/config.h"
#include "plugin/optimizer.h"
#include "sync_policies/sync_policy.h"

namespace gw {

struct SyncSettings {
  sync_policies::SyncOptions policy;
  bool average_state = false;  // GRADWIRE_LOCAL_SGD_AVERAGE_STATE
  // diloco: GRADWIRE_OUTER_OPTIMIZER, GRADWIRE_OUTER_LR, GRADWIRE_OUTER_MOMENTUM (Note [DiLoCo]).
  kernels::OuterStep outer;
  // Streaming diloco (Note [Streaming DiLoCo]): GRADWIRE_DILOCO_FRAGMENTS (0: off),
  // GRADWIRE_DILOCO_DELAY and GRADWIRE_DILOCO_MIXING.
  struct Streaming {
    std::int64_t fragments = 0;
    std::int64_t delay = 0;
    float mixing = 0.5f;
  } streaming;
  // GRADWIRE_SYNC=auto: every_step (policy) until auto decides; local_sgd at policy.period is
  // one of its candidates (local_sgd()).
  bool automatic = false;

  // This run's local_sgd at its GRADWIRE_LOCAL_SGD_K.
  SyncSettings local_sgd() const;
};

// Throws config::ConfigError naming the variables when:
// - a local SGD parameter is set but has no effect under the chosen GRADWIRE_SYNC (for example
//   GRADWIRE_LOCAL_SGD_K without GRADWIRE_SYNC=local_sgd: a silent fallback to synchronous SGD
//   would be the worst outcome);
// - post_local_sgd has no GRADWIRE_LOCAL_SGD_BEGIN_STEP, or local_sgd has one;
// - GRADWIRE_ADAPTIVE_INIT_K exceeds GRADWIRE_ADAPTIVE_MAX_K;
// - GRADWIRE_SYNC=auto without GRADWIRE_COMPRESSOR=auto (the choice is one, of both);
// - a local policy meets GRADWIRE_COMPRESSOR=topk or dgc (they compress gradient exchanges and
//   keep per-step residuals or momentum, which local steps would leave stale; local SGD averages
//   parameters, and fp16 sends those as fp16 deltas), or GRADWIRE_GRADIENT_REDUCTION=sum (local
//   steps use each rank's own gradient and averaging averages, so a summed gradient would change
//   the step size by the world size between synchronous and local steps);
// - diloco meets GRADWIRE_COMPRESSOR=dgc or auto (its pseudo-gradients go through none, fp16, topk
//   or powersgd; Note [DiLoCo]), or GRADWIRE_OUTER_OPTIMIZER=average a GRADWIRE_OUTER_MOMENTUM;
// - GRADWIRE_DILOCO_DELAY or _MIXING is set without GRADWIRE_DILOCO_FRAGMENTS, the fragments
//   exceed H, or the delay is not below H.
SyncSettings read_sync_settings(const config::Config& config);

// Throws config::ConfigError when GRADWIRE_LOCAL_SGD_AVERAGE_STATE=1 meets an inner optimizer
// that does not expose its state (Optimizer::state_buffers).
void check_sync_supports(const SyncSettings& settings, Optimizer& inner);

}  // namespace gw
