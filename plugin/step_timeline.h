// StepTimeline: the per-step record behind GRADWIRE_TIMELINE (Note [Timeline format]). The step
// and the engine's jobs stamp when each bucket's phases begin and end; at the end of the step it
// becomes spans on the program's track and on one track per bucket, flushed to the rank's file.
// When the timeline is off, now() reads no clock and nothing is written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fusion/bucket_plan.h"
#include "plugin/bucket_exchange.h"
#include "plugin/parameter_set.h"
#include "plugin/timeline.h"

namespace gw {

class StepTimeline {
 public:
  using Clock = Timeline::Clock;
  using TimePoint = Clock::time_point;

  // A bucket's phases in the current step. Written by the engine's job for the bucket, read by
  // record_step() once the engine is idle.
  struct BucketTimes {
    TimePoint released, started;  // first release; the exchange job's start
    ExchangeTimes exchange;       // the exchange job's phases
    TimePoint check_begin, check_end, average_begin, average_end;
    bool exchange_ran = false, check_ran = false, average_ran = false;
  };

  // Off until open().
  explicit StepTimeline(std::size_t buckets) : times_(buckets) {}

  // Creates the rank's file (Timeline::rank_path) with a track per bucket, named after its
  // parameters and size. Throws std::runtime_error when the file cannot be written.
  void open(const std::string& file, int rank, const fusion::BucketPlan& plan,
            const ParameterSet& params);

  bool on() const { return file_ != nullptr; }
  std::string path() const { return file_ ? file_->path() : ""; }
  TimePoint now() const { return on() ? Clock::now() : TimePoint(); }

  BucketTimes& bucket(std::size_t b) { return times_[b]; }
  // Where the bucket exchange stamps its phases; null when off.
  ExchangeTimes* exchange_times(std::size_t b) { return on() ? &times_[b].exchange : nullptr; }
  // The step's first gradient_ready (or step() without any).
  void gradients_begin() { first_ready_ = now(); }
  void released(std::size_t b) {
    if (on()) times_[b].released = Clock::now();
  }

  // Writes the step's events (step() waited for buckets from wait_begin to wait_end, then the
  // inner optimizer ran, or was skipped on an overflow, until update_end) and flushes the file.
  void record_step(std::int64_t step, TimePoint wait_begin, TimePoint wait_end,
                   TimePoint update_end, bool skipped);
  // Where the next step's span begins: now.
  void restart() { previous_step_end_ = now(); }

 private:
  std::unique_ptr<Timeline> file_;
  std::vector<BucketTimes> times_;
  TimePoint first_ready_, previous_step_end_;
};

}  // namespace gw
