// The run's clocks: wall time taken on rank 0 after a barrier, and an epoch's training time with
// the pauses for evaluations and checkpoint writes left out.
#pragma once

#include "plugin/comm/communicator.h"

namespace gw::trainer {

// Wall time in seconds after every rank has arrived: the time of the slowest rank. Collective.
double synchronized_now(Communicator& comm);

// An epoch's training clock. It runs from construction, stops at pause() and runs again from
// resume(); evaluations and checkpoint writes happen in between, so they are not training time
// (Note [Evaluation points]), and neither are the barriers around them. Every call is collective.
class TrainingClock {
 public:
  // Starts the clock; `trained_before`: the epoch's training seconds before (a resumed run's
  // epoch), `wall_before` its wall seconds.
  TrainingClock(Communicator& comm, double trained_before, double wall_before);

  // Stops the clock; returns the synchronized time it stopped at.
  double pause();
  // Starts it again.
  void resume();

  // The epoch's training seconds up to the last pause.
  double trained() const { return trained_; }
  // The synchronized time the epoch started (before this process's start, after a resume).
  double epoch_start() const { return epoch_start_; }

 private:
  Communicator* comm_;
  double epoch_start_;
  double segment_start_;
  double trained_;
};

}  // namespace gw::trainer
