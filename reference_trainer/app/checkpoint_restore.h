// Putting a checkpoint back into the model and its optimizer (docs/CHECKPOINT.md).
#pragma once

#include <cstddef>

#include "plugin/distributed_optimizer.h"
#include "reference_trainer/app/checkpoint.h"
#include "reference_trainer/app/training_model.h"

namespace gw::trainer {

// Puts this rank's parameters and optimizer state back as `c` holds them. Throws CheckpointError
// ("--resume: ...") when `c` does not fit: another number of steps per epoch or of parameters, an
// optimizer state that does not load, or one at another step.
void restore_checkpoint(const Checkpoint& c, TrainingModel& model, DistributedOptimizer& optimizer,
                        std::size_t steps_per_epoch);

}  // namespace gw::trainer
