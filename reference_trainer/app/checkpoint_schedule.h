// Where and when a run writes its checkpoints (docs/CHECKPOINT.md), and what it wrote.
#pragma once

#include <cstdint>
#include <string>

#include "reference_trainer/app/train_result.h"
#include "reference_trainer/app/trainer_options.h"

namespace gw::trainer {

// Note [When a checkpoint is taken]
// A checkpoint holds the state from which a straight run takes its next step, so that a run
// resumed from it continues exactly as the straight one (bit for bit). Two places differ:
// - Inside an epoch (every --checkpoint-every steps, or where --max-steps or --time-budget ends
//   the run), it is written after the step and any evaluation (which leaves the training as it
//   was, Note [Evaluation points]), and before the end-of-run evaluation: under local SGD that
//   averages the parameters (synchronize_parameters), which a straight run going on past this
//   step does not do.
// - At an epoch's end, it is written after the epoch's averaging and evaluation, which a
//   straight run does too, with the position at the next epoch's first step.
// A diverged run writes no checkpoint at its end: the last one before is the one to go back to.
// The time a write takes is left out of the training time, as an evaluation's is.
class CheckpointSchedule {
 public:
  // This rank's file of options.path (checkpoint_files.h, checkpoint_rank_path); none without one.
  CheckpointSchedule(const CheckpointOptions& options, int rank);

  const std::string& file() const { return file_; }

  // After `steps` steps, inside an epoch: every --checkpoint-every steps.
  bool due_inside_epoch(std::int64_t steps) const {
    return !file_.empty() && every_ > 0 && steps % every_ == 0;
  }
  // The run stops inside an epoch after `steps` steps: unless that step's is written already.
  // Not after a divergence.
  bool due_at_stop(std::int64_t steps) const {
    return !file_.empty() && result_.last_step != steps;
  }
  // At an epoch's end after `steps` steps: when one is due, or where the run ends (`last`).
  bool due_at_epoch_end(std::int64_t steps, bool last) const {
    return !file_.empty() && ((every_ > 0 && steps % every_ == 0) || last);
  }

  void resumed_from(std::int64_t step) { result_.resumed_from_step = step; }
  // Whether the next write rotates the current file to .prev (Note [Checkpoint generations]).
  bool rotates() const { return !keeps_previous_; }
  void written(std::int64_t step) {
    result_.last_step = step;
    ++result_.written;
    keeps_previous_ = false;  // the current file now holds a step every rank has
  }
  void final_failed(const std::string& message, bool here) {
    result_.final_error = message;
    result_.final_error_here = here;
  }
  const CheckpointResult& result() const { return result_; }

 private:
  std::string file_;
  std::int64_t every_;
  bool keeps_previous_;
  CheckpointResult result_;
};

}  // namespace gw::trainer
