// When a run evaluates and when it stops: --epochs, --max-steps, --eval-every, --time-budget.
#pragma once

#include <cstdint>

#include "reference_trainer/app/trainer_options.h"

namespace gw::trainer {

// Every epoch ends with an evaluation; --eval-every adds some inside epochs. --time-budget counts
// the training seconds (evaluations excluded) and is read at evaluations only: rank 0 votes there,
// so every rank stops after the same one. --max-steps and the last epoch end the run at a step.
class RunSchedule {
 public:
  explicit RunSchedule(const ScheduleOptions& options) : options_(options) {}

  int epochs() const { return options_.epochs; }
  bool last_epoch(int epoch) const { return epoch == options_.epochs; }
  bool reached_max_steps(std::int64_t steps) const {
    return options_.max_steps > 0 && steps >= options_.max_steps;
  }
  // After `steps` steps: an evaluation inside the epoch is due. Not where the epoch or the run
  // ends (`at_end`): the epoch's own evaluation follows there.
  bool evaluation_due(std::int64_t steps, bool at_end) const {
    return options_.eval_every > 0 && steps % options_.eval_every == 0 && !at_end;
  }
  // Rank 0's vote at an evaluation after `trained` seconds of training.
  bool over_budget(double trained) const {
    return options_.time_budget > 0 && trained >= options_.time_budget;
  }

 private:
  ScheduleOptions options_;
};

}  // namespace gw::trainer
