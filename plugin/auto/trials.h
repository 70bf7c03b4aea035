// auto's trials at step 0 (Note [Choosing at the first step]): each candidate's bytes and local
// work from trial encodes of a copy of the gradients, and where its bytes are cheap, a real
// exchange of every bucket, timed.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "compressors/compressor.h"
#include "fusion/bucket_plan.h"
#include "kernels/stream.h"
#include "plugin/comm/counting_communicator.h"
#include "plugin/exchange/bucket_exchange.h"
#include "plugin/parameter_set.h"

namespace gw {

inline constexpr int kTrialPasses = 3;
inline constexpr int kTrialExchanges = 3;
inline constexpr double kTrialExchangeSeconds = 0.02;

// What one bucket's trial sends through the bottleneck, and its collectives, from what
// BucketExchange::trial found (Note [What the counters count] for the dense parts, the splits'
// Notes for the sparse ones). Pure.
struct WireEstimate {
  int rank = 0, world_size = 1;
  // Several nodes of several ranks: the bytes that cross between nodes count.
  bool across = false;
  std::size_t nodes = 0, local = 1;
  int cross_rank = 0, cross_size = 1;

  // From `comm`'s levels (Communicator::levels).
  static WireEstimate of(CountingCommunicator& comm);
  double dense_bytes(std::size_t elements, std::size_t element_size) const;
  // Bytes and collectives of one bucket's exchange.
  void sent(const ExchangeTrial& t, double& bytes, double& calls) const;
};

// A copy of the gradients laid out as the step's buckets, which every trial refills from the
// gradients (stream memory) before it runs.
class TrialBuckets {
 public:
  TrialBuckets(const ParameterSet& params, const fusion::BucketPlan& plan, const float* gradients);
  void refill();
  const std::vector<compressors::BucketView>& views() const { return views_; }
  const kernels::Stream& stream() const { return stream_; }

 private:
  kernels::Stream stream_;
  const float* gradients_;
  std::size_t numel_;
  kernels::Buffer<float> copy_;
  std::vector<compressors::BucketView> views_;
};

// One candidate's figures per step, the last bucket's apart (the cost model's inputs).
struct CodecFigures {
  double codec_s = 0, bytes = 0, calls = 0;
  double last_codec_s = 0, last_bytes = 0, last_calls = 0;
};

// Encodes every bucket with `trial` (at its steady state) as BucketExchange::trial does: once
// untimed where `timed_passes` > 1 (the first pass pays for allocating and touching its buffers),
// then `timed_passes` times; each bucket's median codec time.
CodecFigures trial_codec(compressors::Compressor& trial, TrialBuckets& buckets,
                         const WireEstimate& wire, int timed_passes);

// Exchanges every bucket with `trial` for real (control traffic), once untimed and then
// kTrialExchanges times, each pass after a barrier: the sum of the buckets' median times, and the
// last bucket's. Collective.
struct ExchangeFigures {
  double all_s = 0, last_s = 0;
};
ExchangeFigures timed_exchange(CountingCommunicator& comm, compressors::Compressor& trial,
                               TrialBuckets& buckets);

}  // namespace gw
