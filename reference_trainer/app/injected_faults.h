// Faults the suite injects into gradwire_train on purpose (Note [Faults the suite injects]).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace gw::trainer {

// Note [Faults the suite injects]
// GW_TEST_FAULT, a test's variable (not a GRADWIRE_* setting, read nowhere else), fails a chosen
// rank at a chosen step and phase, as torchft's integration tests do: the suite reaches the
// windows that matter (ranks a checkpoint generation apart, a rank gone in the middle of its
// commit) on purpose rather than by chance. Its value is one or more RANK:STEP:PHASE:ACTION,
// separated by commas. PHASE:
//   step    after the optimizer step that makes the run's step count STEP;
//   stage   in the checkpoint write at step STEP, where this rank stages its new file;
//   commit  in that write, after the ranks agreed that every rank staged its file, before this
//           rank rotates its current file to .prev (Note [Checkpoint generations]);
//   rotate  in that write, after the rotation, before the new file takes the current name;
//   room    in the check of room for the outputs after step STEP, before this rank's probe
//           (Note [Room for what a run writes]).
// ACTION:
//   kill           SIGKILL, at once;
//   delay-kill=S   SIGKILL after S seconds, in which the other ranks go on (a slow disk, then a
//                  kill: at `commit`, the others commit theirs);
//   delay=S        S seconds' wait, then the run goes on (a slow disk);
//   throw          an exception (std::runtime_error) on this rank: the job ends as on any error;
//   full-disk      only at `stage`: the staging fails with ENOSPC, as on a full file system.
// A value that is not of this form, or names a rank outside the world, stops every rank before
// training with an error saying what is accepted. tests/integration/fault_matrix.sh builds on it.

enum class FaultPhase { kStep, kStage, kCommit, kRotate, kRoom };

struct InjectedFault {
  enum class Action { kKill, kDelayKill, kDelay, kThrow, kFullDisk };
  int rank = 0;
  std::int64_t step = 0;
  FaultPhase phase = FaultPhase::kStep;
  Action action = Action::kKill;
  double seconds = 0;  // delay and delay-kill
  std::string text;    // as given, for messages
};

// Parses GW_TEST_FAULT's value (empty: none). Throws config::ConfigError naming the entry that is
// wrong and the accepted form.
std::vector<InjectedFault> parse_injected_faults(const std::string& value, int world_size);
// The same for the environment's GW_TEST_FAULT (none when unset).
std::vector<InjectedFault> injected_faults_from_environment(int world_size);

// Does what each of `faults` for (`rank`, `step`, `phase`) says: returns after a delay, throws, or
// does not return (SIGKILL).
void inject_faults(const std::vector<InjectedFault>& faults, int rank, std::int64_t step,
                   FaultPhase phase);

// What a checkpoint write calls at its phases (write_checkpoint, commit_checkpoint).
using FaultHook = std::function<void(FaultPhase)>;

}  // namespace gw::trainer
