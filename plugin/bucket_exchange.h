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

// Note [Sparse allreduce over two levels]
// On a communicator with two levels (Communicator::levels(): N nodes of L ranks) the split
// (Note [Sparse allreduce by split]) runs at both, so that what crosses the network is one node's
// merged pairs rather than every rank's. The encoder cuts each tensor into n = N L ranges as
// before; range r belongs to node r / L's local rank r % L (its owner).
//  1. Node-local alltoallv: local rank q receives its node's pairs of the ranges m L + q, one per
//     node m (counts first).
//  2. It sums each of those ranges over its node (in local rank order) and keeps the largest
//     node_merge_k = ceil(k / n) of each sum, one share: a node's merged message is about as long
//     as one rank's. What it does not keep goes into its own residual (Compressor::reselect).
//  3. Cross alltoallv among the ranks with this local rank: each node's merged pairs of range
//     m L + q go to node m, the range's owner.
//  4. The owner sums the N nodes' messages, in node order, and keeps split_k = 2 ceil(k / n), as
//     the flat split; the rest goes into its residual.
//  5. Cross allgatherv of the kept pairs, then node-local allgatherv of the N messages each rank
//     now holds, so that every rank has every range's kept pairs and writes them as the flat split
//     does.
// Steps 2 and 4 work on the pairs alone (merge_range: the received pairs added into sums that are
// kept zero between steps, their distinct indices the candidates, Compressor::reselect_among),
// never on every element of a range: a rank merges 1/L of each tensor, and a pass over it would
// cost more than the bytes it saves. The network carries steps 3 and 5: about k (N - 1) / N + 2k (N
// - 1) / N pairs per node, where the flat split sends L times that across (each of a node's ranks
// sends its own). Nothing is lost: whatever steps 2 and 4 drop stays in the dropping rank's
// residual, so summed over the ranks residuals and applied values equal what was accumulated, as in
// the flat split. The dropped values of step 2 go to the merging rank rather than back to the ranks
// that sent them: the node-wide sum is what error feedback conserves, and a message back would cost
// a round inside the node. Every message is checked against its range before anything is added, and
// an error names the world rank that sent it (or, in step 5, that kept it). The applied values
// differ from the flat split's: step 2 ranks a node's sums rather than the world's.
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
  // Plans and encodes `bucket` as run() would, and runs the local halves of the low-rank round
  // and the dense decode, with nothing sent: what the exchange would carry, and how long the
  // local work took. It changes the compressor's state and the bucket: give it a trial
  // compressor and a copy.
  ExchangeTrial trial(compressors::Compressor& compressor, const compressors::BucketView& bucket,
                      int world_size);

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
  // Where encode() writes for `plan`: the dense part in place or in dense_f32_ / dense_f16_ (any P
  // factors after it), the sparse part into to_ (one writer per rank, under the split) or sparse_.
  compressors::EncodedBucket lay_out_payload(const compressors::BucketView& bucket,
                                             const compressors::ExchangePlan& plan, int world_size,
                                             const kernels::Stream& stream);
  // The sparse part by split (Note [Sparse allreduce by split]): steps 1 to 3, every message
  // checked; the bucket is written afterwards by accumulate_split.
  void exchange_split(Communicator& comm, compressors::Compressor& compressor,
                      const compressors::BucketView& bucket, const compressors::ExchangePlan& plan,
                      TrafficKind kind);
  void accumulate_split(const kernels::Stream& stream);
  // The same over two levels (Note [Sparse allreduce over two levels]).
  void exchange_split_levels(const Levels& levels, compressors::Compressor& compressor,
                             const compressors::BucketView& bucket,
                             const compressors::ExchangePlan& plan, TrafficKind kind);
  // Sends out[d] to rank d of `comm` (the lengths first, checked against `plan`'s most and naming
  // senders[d] or rank d) and returns what arrived, rank by rank in received_; `words` receives
  // each sender's length.
  const std::uint32_t* alltoall_messages(Communicator& comm,
                                         const std::vector<compressors::SparseMessageWriter>& out,
                                         const compressors::BucketView& bucket,
                                         const compressors::ExchangePlan& plan,
                                         const std::vector<int>* senders, TrafficKind kind,
                                         const kernels::Stream& stream,
                                         std::vector<std::size_t>& words);
  // kept_plan_: `plan` allowing split_k of each tensor's k over `ranges`; kept_ emptied.
  void prepare_kept(const compressors::ExchangePlan& plan, std::size_t ranges,
                    const kernels::Stream& stream);
  // merge_sums_, zero at [0, numel) (zeroed only where a merge may not have left it so).
  float* zeroed_sums(std::size_t numel, const kernels::Stream& stream);
  // Adds the senders' checked messages of range r (of `ranges`) into `sums` (zero there before,
  // laid out by lay_out_range), in sender order, and appends to `out` the largest budget.k of each
  // tensor among the indices they name (Compressor::reselect_among: the rest into the residual,
  // `sums` zero again). O(pairs): nothing is done per element of the range.
  void merge_range(compressors::Compressor& compressor, const compressors::BucketView& bucket,
                   const compressors::ExchangePlan& plan, const compressors::ExchangePlan& budget,
                   std::size_t ranges, std::size_t r, const compressors::BucketView& sums,
                   const std::uint32_t* words, const compressors::SparseSegments& segments,
                   compressors::SparseMessageWriter& out);
  // Checks range r's kept pairs (kept_words_[r] words at kept_offset_[r] in received_kept_, for
  // r < ranges) against range r of each sparse tensor; world_rank, where given, names range r's
  // keeper (else rank r).
  void validate_kept(const compressors::BucketView& bucket, const compressors::ExchangePlan& plan,
                     std::size_t ranges, const std::vector<int>* world_rank,
                     const kernels::Stream& stream);
  // Appends to `out` the largest budget.k of each sparse tensor's range r (of `ranges`), held in
  // `sums` (laid out by lay_out_range); the rest goes into the compressor's residual.
  static void reselect_range(compressors::Compressor& compressor,
                             const compressors::BucketView& bucket,
                             const compressors::ExchangePlan& plan,
                             const compressors::ExchangePlan& budget, std::size_t ranges,
                             std::size_t r, const compressors::BucketView& sums,
                             compressors::SparseMessageWriter& out);
  // Range r (of `ranges`) of each sparse tensor, back to back from `data`: `view` is the bucket
  // with those tensors' slots moved there; range_numel is its length.
  static std::size_t range_numel(const compressors::BucketView& bucket,
                                 const compressors::ExchangePlan& plan, std::size_t ranges,
                                 std::size_t r);
  static void lay_out_range(const compressors::BucketView& bucket,
                            const compressors::ExchangePlan& plan, std::size_t ranges,
                            std::size_t r, float* data, compressors::BucketView& view);

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
  std::vector<std::size_t> kept_offset_;  // range r's kept pairs in received_kept_
  // The split over two levels': the senders' world ranks; step 1's counts, its messages by range
  // and the views they are summed in; the node's merged messages (step 2) and their budget; the
  // kept pairs of this local rank's ranges (step 5).
  std::vector<int> local_senders_, cross_senders_, entry_senders_;
  std::vector<std::size_t> level_counts_, recv_words_, merge_offset_, cross_words_;
  std::vector<std::vector<std::size_t>> merge_words_;
  kernels::Buffer<std::uint32_t> by_range_;
  std::vector<compressors::BucketView> merge_views_;
  std::vector<compressors::SparseSegments> merge_segments_;
  compressors::ExchangePlan node_plan_;
  std::vector<compressors::SparseMessageWriter> merged_;
  kernels::Buffer<std::uint32_t> node_kept_;
  kernels::Buffer<float> merge_sums_;  // zero between merges (zeroed_sums)
  std::size_t zeroed_numel_ = 0;
  bool sums_zeroed_ = false;
  kernels::Buffer<std::uint32_t> candidates_;
};

}  // namespace gw
