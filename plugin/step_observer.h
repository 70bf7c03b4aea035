// What watches a step without steering it (Note [Step observers]).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/stream.h"

namespace gw {

// Note [Step observers]
// Two parts of the optimizer watch the step rather than run it: GRADWIRE_COMPRESSOR=auto's timing
// (its inputs at step 0 and its check after the decision) and the step timeline
// (GRADWIRE_TIMELINE). Both implement StepObserver, and DistributedOptimizer calls its list of them
// at the same few points of every step, in order: restarted (construction and load_state),
// gradients_begin, bucket_released (each bucket, in launch order), gradients_ready (step() starts
// collecting), step_ended. An observer never changes what the step does; the bucket jobs' own
// phases, which only the timeline records, stay the timeline's (StepTimeline::bucket). The clock
// is read only where some observer wants the times (StepObservers::now): off, a step reads none.

using StepClock = std::chrono::steady_clock;

// Host clock times of one step's phases (a default time point where no observer wants times).
struct StepEnd {
  std::int64_t step = 0;
  StepClock::time_point wait_begin, wait_end;      // step() collecting the buckets
  StepClock::time_point update_begin, update_end;  // the inner optimizer's update alone
  StepClock::time_point end;                       // the step's work done (before averaging)
  bool skipped = false;                            // AMP skipped the update
};

class StepObserver {
 public:
  virtual ~StepObserver() = default;
  virtual bool wants_times() const { return false; }
  // Construction or load_state: the next step's compute starts here.
  virtual void restarted() {}
  // The step's first gradient_ready (or step() without any), on the program's stream.
  virtual void gradients_begin(const kernels::Stream& /*program*/) {}
  // Bucket b's gradients are final: backward wrote them on `program`.
  virtual void bucket_released(std::size_t /*b*/, const kernels::Stream& /*program*/) {}
  // step() starts collecting the gradients.
  virtual void gradients_ready() {}
  // A backward pass before the last of optimizer step `step` ended: `pass` (0-based) of
  // `passes` (Note [Gradient accumulation]).
  virtual void pass_ended(std::int64_t /*step*/, int /*pass*/, int /*passes*/) {}
  // The step is over. Collective where an observer needs its ranks (every rank ends it together).
  virtual void step_ended(const StepEnd& /*end*/) {}
};

// The optimizer's observers, called in the order they were added.
class StepObservers {
 public:
  void add(StepObserver* o) { list_.push_back(o); }
  // The host clock where an observer wants times; a default time point otherwise.
  StepClock::time_point now() const {
    for (const StepObserver* o : list_)
      if (o->wants_times()) return StepClock::now();
    return {};
  }
  void restarted() const {
    for (StepObserver* o : list_) o->restarted();
  }
  void gradients_begin(const kernels::Stream& program) const {
    for (StepObserver* o : list_) o->gradients_begin(program);
  }
  void bucket_released(std::size_t b, const kernels::Stream& program) const {
    for (StepObserver* o : list_) o->bucket_released(b, program);
  }
  void gradients_ready() const {
    for (StepObserver* o : list_) o->gradients_ready();
  }
  void pass_ended(std::int64_t step, int pass, int passes) const {
    for (StepObserver* o : list_) o->pass_ended(step, pass, passes);
  }
  void step_ended(const StepEnd& end) const {
    for (StepObserver* o : list_) o->step_ended(end);
  }

 private:
  std::vector<StepObserver*> list_;
};

}  // namespace gw
