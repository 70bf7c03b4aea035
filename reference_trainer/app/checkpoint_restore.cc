#include "reference_trainer/app/checkpoint_restore.h"

#include <sstream>
#include <string>

namespace gw::trainer {

void restore_checkpoint(const Checkpoint& c, TrainingModel& model, DistributedOptimizer& optimizer,
                        std::size_t steps_per_epoch) {
  const auto mismatch = [](const std::string& what) { throw CheckpointError("--resume: " + what); };
  if (c.steps_per_epoch != steps_per_epoch) {
    mismatch("the checkpoint has " + std::to_string(c.steps_per_epoch) +
             " steps per epoch, this run " + std::to_string(steps_per_epoch));
  }
  if (c.parameters.size() != model.num_parameters()) {
    mismatch("the checkpoint holds " + std::to_string(c.parameters.size()) +
             " parameters, this model has " + std::to_string(model.num_parameters()));
  }
  model.set_parameters(c.parameters.data());
  std::istringstream in(c.optimizer_state);
  try {
    optimizer.load_state(in);
  } catch (const std::exception& e) {
    mismatch(std::string("the optimizer state: ") + e.what());
  }
  if (in.peek() != std::char_traits<char>::eof()) {
    mismatch("the optimizer state has bytes after its end");
  }
  if (optimizer.steps() != c.steps) {
    mismatch("the optimizer state is at step " + std::to_string(optimizer.steps()) +
             ", the checkpoint at step " + std::to_string(c.steps));
  }
}

}  // namespace gw::trainer
