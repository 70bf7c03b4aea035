// Checkpoint files on disk: their per-rank names, the two generations each rank keeps, and how
// the ranks agree when they write them and when they resume from them.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "plugin/comm/communicator.h"
#include "reference_trainer/app/checkpoint.h"
#include "reference_trainer/app/injected_faults.h"
#include "reference_trainer/app/trainer_options.h"

namespace gw::trainer {

// Note [Checkpoint generations]
// Each rank writes its own file, and a job can be killed at any moment, also between two ranks'
// writes: a set of files where rank 0 holds step 40 and rank 1 step 30 cannot be resumed. So:
// - A write is atomic per rank (output_file.h): every rank writes its new file under a temporary
//   name and flushes it to the disk; the ranks then agree that every rank did (one 4-byte
//   allreduce: a failure on any rank stops every rank, and each removes its temporary file);
//   only then does each rank rename its current file to <file>.prev and the new one to <file>.
// - Ranks can therefore be at most one generation apart (no rank can start the next write
//   before every rank finished staging this one), and every rank keeps the generation before
//   its newest: whatever the moment of a kill, the step of the previous write is on every rank,
//   as <file> or <file>.prev (a kill between a rank's two renames leaves only <file>.prev).
// - --resume reads both generations of each rank, checks each (Note [Checkpoint format],
//   Note [Run identity]), and the ranks take the newest step that every rank has; a step missing on
//   some rank is an error naming each rank's steps. A file that exists but cannot be read or
//   fails a check is an error, even when the other generation would do: it is damage that the
//   user should see, not a state a kill can leave.
// - The invariant: the newest step that every rank has stays on disk on every rank until a newer
//   step is on disk on every rank. A write keeps it because the ranks passed the previous write's
//   agreement, so every rank's current file holds the previous write's step, which is the one
//   rotated to .prev. After a resume that is not so: a rank that resumed from its .prev (its
//   current file holds a newer step not every rank has) must keep that .prev, not rotate the
//   newer file over it: a kill in the middle of the first write would otherwise leave no step on
//   every rank (ranks at steps (30, 20) and (20, 10) resume from 20; rank 0's rotation would give
//   (new, 30) beside (20, 10)). So that rank's first write replaces its current file and keeps
//   .prev (CheckpointOptions::first_write_keeps_previous); later writes rotate as usual.
// - After such a resume, a rank may still hold a newer file that not every rank has, until the
//   first write replaces it. It cannot be chosen unless every rank has the same step, and a
//   step's state is a pure function of the run identity (the whole training is deterministic),
//   so it would be the state the resumed run computes anyway.
// - A kill leaves the temporary file of an unfinished write (<file>.tmp.<pid>) behind; nothing
//   reads it.

// This rank's file for a --checkpoint or --resume path: "{rank}" in `path` is replaced by the
// rank, otherwise ".rank<r>" is appended (as GRADWIRE_TIMELINE's files, Timeline::rank_path,
// where ".rank<r>" goes before a ".json").
std::string checkpoint_rank_path(const std::string& path, int rank);
// The generation before the newest: `rank_path` + ".prev".
std::string previous_generation(const std::string& rank_path);

// The two file-system halves of a write, for write_checkpoint and for tests. stage writes `bytes`
// to a temporary file beside `rank_path`, flushed to the disk, and returns its name (on failure
// it throws std::runtime_error and leaves nothing behind); commit renames `rank_path` (if there
// is one) to its .prev when it `rotate`s, then `staged` to `rank_path`.
std::string stage_checkpoint(const std::string& rank_path, const std::string& bytes);
// `fault` is called at each phase of the write (Note [Faults the suite injects]).
void commit_checkpoint(const std::string& staged, const std::string& rank_path, bool rotate = true,
                       const FaultHook& fault = nullptr);

// A checkpoint write that failed on some rank, thrown by every rank together (write_checkpoint):
// `here` on a rank whose own write failed, with its reason; the others give the reason of the
// lowest rank that failed, naming it.
class CheckpointWriteFailed : public std::runtime_error {
 public:
  CheckpointWriteFailed(const std::string& message, bool here)
      : std::runtime_error(message), here_(here) {}
  bool here() const { return here_; }

 private:
  bool here_;
};

// Writes this rank's checkpoint as the newest generation (Note [Checkpoint generations]); without
// `rotate`, the current file is replaced and .prev kept. Collective. When the write fails on any
// rank, every rank throws CheckpointWriteFailed (the failing one with its reason) and the previous
// generations stay as they were; a commit that fails after that agreement (a rename) throws
// std::runtime_error on its rank alone.
void write_checkpoint(Communicator& comm, const std::string& rank_path, const std::string& bytes,
                      bool rotate = true, const FaultHook& fault = nullptr);

// One generation of this rank's checkpoint, read and checked.
struct CheckpointGeneration {
  std::string path;
  Checkpoint checkpoint;
};

// Reads this rank's generations, `rank_path` then its .prev (either may be missing, not both),
// and checks each: the format, the identity against `identity` (naming every key that differs)
// and the rank. Throws CheckpointError naming the file.
std::vector<CheckpointGeneration> read_generations(const std::string& rank_path, int rank,
                                                   const std::string& identity);

// The newest step that every rank's list holds; -1 when there is none.
std::int64_t newest_common_step(const std::vector<std::vector<std::int64_t>>& steps_per_rank);

// Collective: every rank reads its generations of `resume_path` (read_generations), the ranks
// agree on the newest step that every rank has, and each returns its generation of that step.
// Any failure is a config::ConfigError thrown on every rank (exit code 2): the rank whose file
// failed prints why, the others that it failed there (agree_on_startup_errors).
CheckpointGeneration agree_resume_point(Communicator& comm, const std::string& resume_path,
                                        const std::string& identity);

// Collective: throws config::ConfigError on every rank when the checkpoint leaves nothing to
// train under `options`: its epochs or --max-steps are done, or rank 0's training seconds have
// used up --time-budget (rank 0's, since its vote stops a run at the budget).
void check_left_to_train(Communicator& comm, const TrainerOptions& options,
                         const Checkpoint& checkpoint);

}  // namespace gw::trainer
