#include "plugin/auto/trials.h"

#include <chrono>

#include "plugin/auto/medians.h"

namespace gw {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

WireEstimate WireEstimate::of(CountingCommunicator& comm) {
  WireEstimate w;
  w.rank = comm.rank();
  w.world_size = comm.size();
  const Levels* levels = comm.levels();
  w.across = levels != nullptr && levels->local->size() > 1 && levels->cross->size() > 1;
  if (w.across) {
    w.nodes = static_cast<std::size_t>(levels->cross->size());
    w.local = static_cast<std::size_t>(levels->local->size());
    w.cross_rank = levels->cross->rank();
    w.cross_size = levels->cross->size();
  }
  return w;
}

double WireEstimate::dense_bytes(std::size_t elements, std::size_t element_size) const {
  if (elements == 0) return 0.0;
  if (across) {
    return static_cast<double>(CountingCommunicator::allreduce_bytes(
        (elements + local - 1) / local, element_size, cross_rank, cross_size));
  }
  return static_cast<double>(
      CountingCommunicator::allreduce_bytes(elements, element_size, rank, world_size));
}

void WireEstimate::sent(const ExchangeTrial& t, double& bytes, double& calls) const {
  bytes = dense_bytes(t.dense_elements, t.dense_element_size) +
          dense_bytes(t.q_elements, sizeof(float));
  calls = (t.dense_elements > 0 ? 1 : 0) + (t.q_elements > 0 ? 1 : 0);
  const double words = static_cast<double>(t.sparse_words);
  const auto n = static_cast<double>(world_size);
  if (t.split && across) {
    // Note [Sparse allreduce over two levels]: steps 3 and 5 cross, 3 W (N - 1) / (N L).
    bytes += 4.0 * 3.0 * words * static_cast<double>(nodes - 1) /
             static_cast<double>(nodes * local);
    calls += 8;
  } else if (t.split) {
    // Note [Sparse allreduce by split]: about 3 W (n - 1) / n.
    bytes += 4.0 * 3.0 * words * (n - 1) / n;
    calls += 4;
  } else if (t.sparse) {
    bytes += 4.0 * words * (across ? n - static_cast<double>(local) : n - 1);
    calls += 2;
  }
}

TrialBuckets::TrialBuckets(const ParameterSet& params, const fusion::BucketPlan& plan,
                           const float* gradients)
    : stream_(params.stream()), gradients_(gradients), numel_(params.numel()) {
  float* copy = copy_.reserve_discard(numel_, stream_);
  views_ = params.bucket_views(plan, copy);
}

void TrialBuckets::refill() {
  kernels::copy_bytes(copy_.data(), gradients_, numel_ * sizeof(float), stream_);
}

CodecFigures trial_codec(compressors::Compressor& trial, TrialBuckets& buckets,
                         const WireEstimate& wire, int timed_passes) {
  const std::vector<compressors::BucketView>& views = buckets.views();
  BucketExchange exchange;
  std::vector<ExchangeTrial> trials(views.size());
  std::vector<std::vector<double>> codec(views.size());
  const int first = timed_passes > 1 ? 1 : 0;
  for (int pass = 0; pass < first + timed_passes; ++pass) {
    buckets.refill();
    for (std::size_t b = 0; b < views.size(); ++b) {
      trials[b] = exchange.trial(trial, views[b], wire.world_size);
      if (pass >= first) codec[b].push_back(trials[b].codec_seconds);
    }
  }
  CodecFigures f;
  for (std::size_t b = 0; b < views.size(); ++b) {
    double bytes = 0, calls = 0;
    wire.sent(trials[b], bytes, calls);
    const double e = median(codec[b]);
    f.codec_s += e;
    f.bytes += bytes;
    f.calls += calls;
    if (b + 1 == views.size()) {
      f.last_codec_s = e;
      f.last_bytes = bytes;
      f.last_calls = calls;
    }
  }
  return f;
}

ExchangeFigures timed_exchange(CountingCommunicator& comm, compressors::Compressor& trial,
                               TrialBuckets& buckets) {
  const std::vector<compressors::BucketView>& views = buckets.views();
  const std::int64_t first = trial.warmup_end_step();
  BucketExchange exchange;
  std::vector<std::vector<double>> seconds(views.size());
  for (int pass = 0; pass <= kTrialExchanges; ++pass) {
    trial.begin_step(first + pass);
    buckets.refill();
    buckets.stream().synchronize();
    comm.barrier();
    for (std::size_t b = 0; b < views.size(); ++b) {
      const Clock::time_point t0 = Clock::now();
      exchange.run(comm, trial, views[b], TrafficKind::kControl);
      if (pass > 0) seconds[b].push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
  }
  ExchangeFigures f;
  for (std::size_t b = 0; b < views.size(); ++b) {
    const double x = median(seconds[b]);
    f.all_s += x;
    if (b + 1 == views.size()) f.last_s = x;
  }
  return f;
}

}  // namespace gw
