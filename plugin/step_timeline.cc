#include "plugin/step_timeline.h"

#include <algorithm>
#include <cstdio>

namespace gw {

void StepTimeline::open(const std::string& file, int rank, const fusion::BucketPlan& plan,
                        const ParameterSet& params) {
  std::vector<std::string> tracks = {"program thread: steps"};
  for (const fusion::Bucket& b : plan.buckets) {
    char mb[32];
    std::snprintf(mb, sizeof mb, "%.2f MB", static_cast<double>(b.numel) * 4 / 1e6);
    tracks.push_back("bucket " + std::to_string(b.index) + ": " + params.bucket_names(b) + " (" +
                     mb + ")");
  }
  file_ = std::make_unique<Timeline>(file, rank, tracks);
  restart();
}

void StepTimeline::record_step(std::int64_t step, TimePoint wait_begin, TimePoint wait_end,
                               TimePoint update_end, bool skipped) {
  if (!file_) return;
  Timeline& tl = *file_;
  const auto now = Clock::now();
  char name[48];
  std::snprintf(name, sizeof name, "step %lld", static_cast<long long>(step));
  tl.span(0, name, previous_step_end_, now, step);
  tl.instant(0, name, now, step);
  tl.span(0, "step() waits for buckets", wait_begin, wait_end, step);
  tl.span(0, skipped ? "step skipped (overflow)" : "inner optimizer", wait_end, update_end, step);
  for (std::size_t b = 0; b < times_.size(); ++b) {
    const BucketTimes& t = times_[b];
    const std::size_t track = b + 1;
    if (t.check_ran || t.exchange_ran) {
      // A step() without gradient_ready: the wait starts at the release.
      const auto first = std::min(first_ready_, t.released);
      tl.span(track, "wait for gradients", first, t.released, step);
      // The bucket's first job: its exchange, or the AMP check that comes before it.
      const auto job_start = !t.exchange_ran ? t.check_begin
                             : t.check_ran   ? std::min(t.started, t.check_begin)
                                             : t.started;
      tl.span(track, "queued", t.released, job_start, step);
    }
    if (t.exchange_ran) {
      tl.span(track, "encode", t.started, t.exchange.encoded, step);
      tl.span(track, "exchange", t.exchange.encoded, t.exchange.exchanged, step);
      tl.span(track, "decode", t.exchange.exchanged, t.exchange.decoded, step);
    }
    if (t.check_ran) tl.span(track, "amp check", t.check_begin, t.check_end, step);
    if (t.average_ran) tl.span(track, "average parameters", t.average_begin, t.average_end, step);
  }
  for (BucketTimes& t : times_) t.exchange_ran = t.check_ran = t.average_ran = false;
  tl.flush();
  previous_step_end_ = Clock::now();
}

}  // namespace gw
