#include "reference_trainer/app/training_clock.h"

#include <chrono>

namespace gw::trainer {

double synchronized_now(Communicator& comm) {
  comm.barrier();
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

TrainingClock::TrainingClock(Communicator& comm, double trained_before, double wall_before)
    : comm_(&comm), trained_(trained_before) {
  segment_start_ = synchronized_now(comm);
  epoch_start_ = segment_start_ - wall_before;
}

double TrainingClock::pause() {
  const double now = synchronized_now(*comm_);
  trained_ += now - segment_start_;
  return now;
}

void TrainingClock::resume() { segment_start_ = synchronized_now(*comm_); }

}  // namespace gw::trainer
