// What makes a checkpoint belong to a run: the identity a resumed run must share with it
// (Note [Run identity]).
#pragma once

#include <cstddef>
#include <string>

#include "plugin/config/config.h"
#include "reference_trainer/app/trainer_options.h"

namespace gw::trainer {

// Note [Run identity]
// A resumed run continues bit for bit only under the configuration it was saved under, so a
// checkpoint holds that configuration as "key=value\n" lines and a resume compares it with its
// own: the world size, the numbers of training and test samples (--train-subset and
// --test-subset as applied to the data set found), every option of
// Note [Options that must agree across ranks] but those that may change on resume, and every
// GRADWIRE_* value of Config::canonical() (the rank-local ones, GRADWIRE_TIMELINE and
// GRADWIRE_LOG_LEVEL, are not in it). What may change: --epochs, --max-steps, --time-budget and
// --eval-every (where and whether to stop or evaluate does not change a step), --checkpoint-every,
// and the paths.
std::string run_identity(const TrainerOptions& options, const config::Config& config,
                         int world_size, std::size_t train_samples, std::size_t test_samples);

// The agreed options (command_line.h) that a resume may change (Note [Run identity]).
bool may_change_on_resume(const std::string& option);

// "" when the two identities are the same; otherwise one line per key that differs,
// "  KEY: checkpoint 'A', this run 'B'" ("<unset>" for a key one of them lacks), in key order.
std::string identity_differences(const std::string& checkpoint, const std::string& this_run);

}  // namespace gw::trainer
