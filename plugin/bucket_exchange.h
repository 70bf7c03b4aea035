// Runs one bucket through a Compressor and the collectives its plan names: encode, dense
// allreduce (fp32 or fp16, with any low-rank P factors), the low-rank Q factors' allreduce, the
// sparse part by allgatherv or by split, checked decode.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "compressors/compressor.h"
#include "kernels/stream.h"
#include "plugin/comm/communicator.h"

namespace gw {

// Where each phase of one run ended (the timeline's encode / exchange / decode spans): events
// recorded on the compressor's stream, so on a device they carry the device's times.
struct ExchangeTimes {
  kernels::Event encoded, exchanged, decoded;
};

class BucketExchange {
 public:
  // Afterwards bucket.data holds, per tensor, the sum over ranks, except the dense part of an fp16
  // plan, which holds the average (the fp16 wire pre-divides by the world size). Collective:
  // every rank passes the same bucket layout at the same step. A malformed sparse message from a
  // peer throws compressors::PayloadError naming it, on every rank, before the bucket is touched.
  // `kind` is what the counters charge the bucket's payload to: gradients, or parameters when local
  // SGD averages them through the same path. Returns the plan that ran (valid until the next
  // call). `times`, when given, has an event recorded at the end of each phase.
  // The bucket and every payload live where the compressor's stream works
  // (Note [Compressors on a stream]); the communicator takes device buffers (MPI stages them,
  // NCCL runs on them). The
  // stream is synchronised before each collective, so the communicator sees finished data, and
  // the decode is enqueued on it after.
  const compressors::ExchangePlan& run(Communicator& comm, compressors::Compressor& compressor,
                                       const compressors::BucketView& bucket,
                                       TrafficKind kind = TrafficKind::kGradient,
                                       ExchangeTimes* times = nullptr);

 private:
  // The sparse part by split (Note [Sparse allreduce by split]): steps 1 to 3, every message
  // checked; the bucket is written afterwards by accumulate_split.
  void exchange_split(Communicator& comm, compressors::Compressor& compressor,
                      const compressors::BucketView& bucket, const compressors::ExchangePlan& plan,
                      TrafficKind kind);
  void accumulate_split(const kernels::Stream& stream);

  // Reused from step to step: once grown, a step allocates only the per-rank count vector that
  // Communicator::allgatherv takes by value.
  compressors::ExchangePlan plan_;
  kernels::Buffer<float> dense_f32_;
  kernels::Buffer<Half> dense_f16_;
  kernels::Buffer<float> factors_q_;  // the low-rank round's Q factors
  compressors::SparseMessageWriter sparse_;
  kernels::Buffer<std::uint32_t> received_;
  std::vector<std::int64_t> sizes_;
  std::vector<std::size_t> ones_;
  std::vector<std::size_t> words_per_rank_;
  compressors::SparseSegments segments_;
  // The split's: each rank's part of this rank's selection, and what this rank received for its
  // ranges (step 1); its kept pairs (step 2); every rank's kept pairs, each checked against the
  // sender's ranges (step 3).
  std::vector<compressors::SparseMessageWriter> to_;
  kernels::Buffer<std::uint32_t> packed_;
  std::vector<std::int64_t> send_sizes_;
  std::vector<std::size_t> send_words_;
  compressors::BucketView mine_;
  kernels::Buffer<float> sums_;
  compressors::ExchangePlan kept_plan_;
  compressors::SparseMessageWriter kept_;
  kernels::Buffer<std::uint32_t> received_kept_;
  std::vector<std::size_t> kept_words_, one_rank_words_;
  std::vector<compressors::BucketView> ranges_;
  std::vector<compressors::SparseSegments> kept_segments_;
};

}  // namespace gw
