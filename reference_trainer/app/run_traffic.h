// This rank's traffic of the run, continued across a resume (Note [Checkpoint figures]).
#pragma once

#include "plugin/comm/counting_communicator.h"

namespace gw::trainer {

TrafficCounters operator+(TrafficCounters a, const TrafficCounters& b);
TrafficCounters operator-(TrafficCounters a, const TrafficCounters& b);

// This rank's traffic of the run: the communicator's counters, continued from a checkpoint's
// after a resume, without what only a stopped-and-resumed run sends (its start-up and the resume
// agreement) and without the checkpoint writes (See Note [Checkpoint figures]). A run that
// neither resumes nor checkpoints counts exactly what the communicator counts.
class RunTraffic {
 public:
  explicit RunTraffic(const CountingCommunicator& comm) : comm_(comm) {}
  TrafficCounters now() const { return base_ + comm_.counters() - left_out_; }
  // Continues from `saved`, leaving out everything this process has sent so far.
  void resume_from(const TrafficCounters& saved) {
    base_ = saved;
    left_out_ = comm_.counters();
  }
  // Runs `f`, leaving its traffic out.
  template <typename F>
  void without(F&& f) {
    const TrafficCounters before = comm_.counters();
    f();
    left_out_ = left_out_ + (comm_.counters() - before);
  }

 private:
  const CountingCommunicator& comm_;
  TrafficCounters base_, left_out_;
};

}  // namespace gw::trainer
