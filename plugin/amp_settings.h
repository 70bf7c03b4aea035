// Reads GRADWIRE_AMP and its parameters: the op lists, the loss scaler, the fp16 wire.
#pragma once

#include "amp/loss_scaler.h"
#include "amp/op_policy.h"
#include "plugin/config/config.h"

namespace gw {

struct AmpSettings {
  bool enabled = false;    // GRADWIRE_AMP
  bool comm_fp16 = true;   // GRADWIRE_AMP_COMM_FP16
  amp::OpPolicy ops = amp::OpPolicy::defaults();
  amp::LossScalerOptions scaler;
};

// `base` is the program's ops with their default lists (amp::OpPolicy::defaults() holds the
// reference trainer's); GRADWIRE_AMP_ALLOW / GRADWIRE_AMP_DENY move ops of it between lists.
// Throws config::ConfigError naming the variables when:
// - an AMP parameter is set while GRADWIRE_AMP=0 (it would have no effect);
// - a list names an op the program does not have (the message lists the known ones), names one
//   op in both lists, or has an empty item;
// - the loss scaler's options are unusable (amp::validate: a scale that is 0 or not finite, a
//   growth factor of 1, a backoff factor of 0 or 1, an initial scale below the floor).
AmpSettings read_amp_settings(const config::Config& config,
                              const amp::OpPolicy& base = amp::OpPolicy::defaults());

}  // namespace gw
