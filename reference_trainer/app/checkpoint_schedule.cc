#include "reference_trainer/app/checkpoint_schedule.h"

#include "reference_trainer/app/checkpoint_files.h"

namespace gw::trainer {

CheckpointSchedule::CheckpointSchedule(const CheckpointOptions& options, int rank)
    : file_(options.path.empty() ? "" : checkpoint_rank_path(options.path, rank)),
      every_(options.every),
      keeps_previous_(options.first_write_keeps_previous) {}

}  // namespace gw::trainer
