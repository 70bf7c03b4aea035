// Runs one bucket through a Compressor and the collectives its plan names: encode (the plan, and
// the payload, compressors::BucketPayload), the dense round (fp32 or fp16, with any low-rank
// factors and their Q round), the sparse algorithm picked once for the bucket (allgatherv, split,
// or split over two levels), decode. This layer moves bytes; what they say is the compressors'.
#pragma once

#include <cstddef>
#include <memory>

#include "compressors/bucket_payload.h"
#include "compressors/compressor.h"
#include "kernels/stream.h"
#include "plugin/comm/communicator.h"
#include "plugin/exchange/dense_rounds.h"
#include "plugin/exchange/sparse_allgather.h"
#include "plugin/exchange/sparse_split.h"
#include "plugin/exchange/two_level_split.h"

namespace gw {

// Note [Collectives ordered on a stream]
// A communicator whose orders_on(stream) is true (the DDP hook's process group on CUDA: the
// group orders its collectives after the current stream, and the current stream after them, and
// the hook makes the compressor's stream the current one) needs no host synchronisation around
// a bucket: run() then enqueues the encode, the dense collectives (told ready_on = the stream)
// and the decode on the stream and returns without waiting for the device, as c10d's own hooks
// do. What a sparse part reads on the host (its counts, the payload's verdicts) still waits, in
// the primitive that hands the value back (Note [Streams]). Every other communicator keeps the
// synchronisation before the collectives and after the decode.

// Where each phase of one run ended (the timeline's encode / exchange / decode spans): events
// recorded on the compressor's stream, so on a device they carry the device's times.
struct ExchangeTimes {
  kernels::Event encoded, exchanged, decoded;
};

// What one bucket's exchange under a compressor would send, and its local work, found without
// sending anything (BucketExchange::trial; GRADWIRE_COMPRESSOR=auto's inputs).
struct ExchangeTrial {
  double codec_seconds = 0;        // encode, the low-rank round's projections, the dense decode
  std::size_t dense_elements = 0;  // the first allreduce's elements: the dense part and any P
  std::size_t dense_element_size = sizeof(float);
  std::size_t q_elements = 0;    // the low-rank round's second allreduce (Q factors)
  std::size_t sparse_words = 0;  // this rank's sparse message, every destination's part
  bool split = false;            // the sparse part goes by split
  bool sparse = false;           // the plan has a sparse part
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
  // NCCL runs on them). The stream is synchronised before each collective, so the communicator
  // sees finished data, and the decode is enqueued on it after; except where the communicator
  // orders its collectives on that stream (Note [Collectives ordered on a stream]).
  const compressors::ExchangePlan& run(Communicator& comm, compressors::Compressor& compressor,
                                       const compressors::BucketView& bucket,
                                       TrafficKind kind = TrafficKind::kGradient,
                                       ExchangeTimes* times = nullptr);

  // The same sequence with nothing sent: plans and encodes `bucket` as run() would, and runs the
  // local halves of the low-rank round and the dense decode: what the exchange would carry, and
  // how long the local work took. It changes the compressor's state and the bucket: give it a
  // trial compressor and a copy.
  ExchangeTrial trial(compressors::Compressor& compressor, const compressors::BucketView& bucket,
                      int world_size);

 private:
  // The algorithm that would sum a split sparse part over `comm`'s ranks (its packing), and the
  // one that sums `plan`'s (null without a sparse part).
  exchange::SparseExchange& split_for(Communicator& comm);
  exchange::SparseExchange* sparse_for(Communicator& comm, const compressors::ExchangePlan& plan);

  compressors::BucketPayload payload_;
  exchange::DenseRounds dense_;
  exchange::SparseAllgather allgather_;
  exchange::SparsePadded padded_;
  exchange::SparseSplit split_;
  std::unique_ptr<exchange::TwoLevelSplit> two_level_;  // made on a communicator's first use
};

}  // namespace gw
