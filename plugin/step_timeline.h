// StepTimeline: the per-step record behind GRADWIRE_TIMELINE (Note [Timeline format]). The step
// and the engine's jobs record events where each bucket's phases begin and end, on the streams
// the phases run on; at the end of the step they become spans on the program's track and on one
// track per bucket, flushed to the rank's file. When the timeline is off, nothing is recorded,
// now() reads no clock and nothing is written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fusion/bucket_plan.h"
#include "kernels/stream.h"
#include "plugin/exchange/bucket_exchange.h"
#include "plugin/parameter_set.h"
#include "plugin/step_observer.h"
#include "plugin/timeline.h"

namespace gw {

// Note [Device phases on the host clock]
// A bucket's phases are events on the streams they run on: its release on the program's stream
// (where backward wrote it), the rest on the communication stream. On the host an event is the
// host clock's time when it was recorded, so the spans are exactly what they were when the step
// read the clock itself. On a device an event is the time the device reached it: when backward's
// kernels for the bucket had finished, when the encode kernels had, and so on, which the host
// cannot see (it only enqueues them). Device times have their own clock, so record_step() places
// them on the host's: it records one more event (the anchor) on the communication stream, which
// every job has drained, waits for it and reads the host clock; an event E then lies at
// anchor_host - (anchor - E), the difference measured by the device (cudaEventElapsedTime, about
// half a microsecond of resolution). Phases of one step are therefore exact relative to each
// other; the step's device spans as a whole sit late on the host clock by the time the host takes
// to see the anchor complete (microseconds). Taking a new anchor every step keeps each difference
// short, so neither clock drift nor the float milliseconds CUDA reports accumulate over a run.
class StepTimeline final : public StepObserver {
 public:
  using Clock = Timeline::Clock;
  using TimePoint = Clock::time_point;

  // A bucket's phases in the current step, as events on the stream each phase ran on
  // (Note [Device phases on the host clock]). Written by the engine's job for the bucket, read by
  // record_step() once the engine is idle.
  struct BucketTimes {
    kernels::Event released;  // on the program's stream: backward has written the bucket
    kernels::Event started;   // on the communication stream: the exchange job starts
    ExchangeTimes exchange;   // the exchange job's phases
    kernels::Event check_begin, check_end, average_begin, average_end;
    bool exchange_ran = false, check_ran = false, average_ran = false;
  };

  // Off until open().
  explicit StepTimeline(std::size_t buckets) : times_(buckets) {}

  // Creates the rank's file (Timeline::rank_path) with a track per bucket, named after its
  // parameters and size. `comm_stream` is where the buckets' jobs run: each step's device events
  // are placed on the host clock through an event recorded there. Throws std::runtime_error when
  // the file cannot be written.
  void open(const std::string& file, int rank, const fusion::BucketPlan& plan,
            const ParameterSet& params, const kernels::Stream& comm_stream);

  bool on() const { return file_ != nullptr; }
  std::string path() const { return file_ ? file_->path() : ""; }
  // The host clock, for the program thread's own phases.
  TimePoint now() const { return on() ? Clock::now() : TimePoint(); }
  // Records `event` on `stream` (nothing when off).
  void mark(kernels::Event& event, const kernels::Stream& stream) const {
    if (on()) event.record(stream);
  }

  BucketTimes& bucket(std::size_t b) { return times_[b]; }
  // Where the bucket exchange records its phases; null when off.
  ExchangeTimes* exchange_times(std::size_t b) { return on() ? &times_[b].exchange : nullptr; }
  // StepObserver (Note [Step observers]): the step's first gradient_ready and each bucket's
  // release, as events on the program's stream; at the step's end, its events written (step()
  // waited for buckets from wait_begin to wait_end, then the inner optimizer ran, or was skipped
  // on an overflow, until end: host times) and the file flushed, after waiting for the
  // communication stream. restarted(): the next step's span begins now.
  bool wants_times() const override { return on(); }
  void restarted() override { previous_step_end_ = now(); }
  void gradients_begin(const kernels::Stream& program) override { mark(first_ready_, program); }
  void bucket_released(std::size_t b, const kernels::Stream& program) override {
    mark(times_[b].released, program);
  }
  // A backward pass before the last of an accumulated step: an instant on the program's track,
  // "backward pass k of N" (Note [Gradient accumulation]).
  void pass_ended(std::int64_t step, int pass, int passes) override;
  void step_ended(const StepEnd& end) override;

 private:
  // Where `event` lies on the host clock (Note [Device phases on the host clock]).
  TimePoint at(const kernels::Event& event) const;

  std::unique_ptr<Timeline> file_;
  kernels::Stream comm_stream_ = kernels::Stream::host();
  std::vector<BucketTimes> times_;
  kernels::Event first_ready_;
  kernels::Event anchor_;  // recorded on comm_stream_ at the end of each step
  TimePoint anchor_host_;  // the host clock when anchor_ had completed
  TimePoint previous_step_end_;
};

}  // namespace gw
