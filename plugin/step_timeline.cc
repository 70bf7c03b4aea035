#include "plugin/step_timeline.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace gw {

void StepTimeline::open(const std::string& file, int rank, const fusion::BucketPlan& plan,
                        const ParameterSet& params, const kernels::Stream& comm_stream) {
  comm_stream_ = comm_stream;
  std::vector<std::string> tracks = {"program thread: steps"};
  for (const fusion::Bucket& b : plan.buckets) {
    char mb[32];
    std::snprintf(mb, sizeof mb, "%.2f MB", static_cast<double>(b.numel) * 4 / 1e6);
    tracks.push_back("bucket " + std::to_string(b.index) + ": " + params.bucket_names(b) + " (" +
                     mb + ")");
  }
  file_ = std::make_unique<Timeline>(file, rank, tracks);
  restarted();
}

StepTimeline::TimePoint StepTimeline::at(const kernels::Event& event) const {
  if (!event.on_device()) return event.host_time();
  const std::chrono::duration<double, std::milli> before_anchor(anchor_.elapsed_ms_since(event));
  return anchor_host_ - std::chrono::round<Clock::duration>(before_anchor);
}

void StepTimeline::pass_ended(std::int64_t step, int pass, int passes) {
  if (!file_) return;
  char name[64];
  std::snprintf(name, sizeof name, "backward pass %d of %d", pass + 1, passes);
  file_->instant(0, name, Clock::now(), step);
}

void StepTimeline::step_ended(const StepEnd& end) {
  if (!file_) return;
  const std::int64_t step = end.step;
  Timeline& tl = *file_;
  const auto now = Clock::now();
  // Note [Device phases on the host clock]: one anchor per step.
  anchor_.record(comm_stream_);
  anchor_.synchronize();
  anchor_host_ = Clock::now();
  char name[48];
  std::snprintf(name, sizeof name, "step %lld", static_cast<long long>(step));
  tl.span(0, name, previous_step_end_, now, step);
  tl.instant(0, name, now, step);
  tl.span(0, "step() waits for buckets", end.wait_begin, end.wait_end, step);
  tl.span(0, end.skipped ? "step skipped (overflow)" : "inner optimizer", end.wait_end, end.end,
          step);
  const bool any_gradients = std::any_of(times_.begin(), times_.end(), [](const BucketTimes& t) {
    return t.check_ran || t.exchange_ran;
  });
  const TimePoint first_ready = any_gradients ? at(first_ready_) : TimePoint();
  for (std::size_t b = 0; b < times_.size(); ++b) {
    const BucketTimes& t = times_[b];
    const std::size_t track = b + 1;
    if (t.check_ran || t.exchange_ran) {
      const TimePoint released = at(t.released);
      // A step() without gradient_ready: the wait starts at the release.
      const TimePoint first = std::min(first_ready, released);
      tl.span(track, "wait for gradients", first, released, step);
      // The bucket's first job: its exchange, or the AMP check that comes before it.
      const TimePoint job_start = !t.exchange_ran ? at(t.check_begin)
                                  : t.check_ran   ? std::min(at(t.started), at(t.check_begin))
                                                  : at(t.started);
      tl.span(track, "queued", released, job_start, step);
    }
    if (t.exchange_ran) {
      const TimePoint encoded = at(t.exchange.encoded), exchanged = at(t.exchange.exchanged);
      tl.span(track, "encode", at(t.started), encoded, step);
      tl.span(track, "exchange", encoded, exchanged, step);
      tl.span(track, "decode", exchanged, at(t.exchange.decoded), step);
    }
    if (t.check_ran) tl.span(track, "amp check", at(t.check_begin), at(t.check_end), step);
    if (t.average_ran) {
      tl.span(track, "average parameters", at(t.average_begin), at(t.average_end), step);
    }
  }
  for (BucketTimes& t : times_) t.exchange_ran = t.check_ran = t.average_ran = false;
  tl.flush();
  previous_step_end_ = Clock::now();
}

}  // namespace gw
