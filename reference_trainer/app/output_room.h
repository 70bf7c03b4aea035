// Room on the disk for what a run will write, checked before it is written
// (Note [Room for what a run writes]).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plugin/comm/communicator.h"
#include "reference_trainer/app/injected_faults.h"

namespace gw::trainer {

// Note [Room for what a run writes]
// gradwire_train's start-up check of its output paths probes a few pages of each folder. After this
// process's first step that updated the parameters (not one that mixed precision skipped;
// TrainingRun::check_room_for_outputs), the size of what the run will write is known (the
// optimizer's state arrays exist from then on: SGD's momentum, Adam's moments, a compressor's
// residuals), and every rank probes its folder for it: its checkpoint (each write stages a whole
// file beside the current one; the run's figures, left out here, grow by a few KB, which the
// probe's 64 KiB margin covers) and, on rank 0, the parameters file. Each rank holds its probes
// until every rank has taken its own (reserve_room, through the agreement), so ranks that share a
// file system are checked for what they need together. A file system without that room stops every
// rank there (exit 2), a step or so in, not at the first checkpoint or after the training. The
// report's size is not known before it is written: its probe stays the pages alone. The training
// clock is paused around the check.

// One output a rank will write: its path, its option (for messages), whether it is rotated as a
// checkpoint is, and its size in bytes.
struct OutputRoom {
  std::string path;
  const char* option;
  bool rotated;
  std::uint64_t bytes;
};

// Collective: every rank reserves room for its `outputs` (reserve_room) and holds it until every
// rank has; a failure on any rank stops every rank (agree_on_startup_errors, exit 2).
// `fault` is called before this rank's probes (Note [Faults the suite injects]).
void agree_on_room(Communicator& comm, const std::vector<OutputRoom>& outputs,
                   const FaultHook& fault = nullptr);

}  // namespace gw::trainer
