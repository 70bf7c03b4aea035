// The Compressor interface: how one rank's gradients are encoded for the exchange and decoded
// after it. Compressors are stateful per parameter (residuals and momentum live with them), decide
// per bucket and step how the bucket travels (an ExchangePlan), and can save and load their state.
// They never talk to the network: plugin/exchange/ runs the collectives a plan names.
//
// Note [Compressors on a stream]
// A compressor works on one kernels::Stream (set_stream; the host until then): its state arrays
// live in that stream's memory, the buckets it encodes and the payload it writes must too, and
// every per-element step is a kernels/ primitive on that stream, so the host and a GPU run the
// same code with bit-identical arithmetic (the primitives promise it, kernels/sparse.h). What
// stays on the host is what decides: plans, counts and the checks' verdicts. A primitive that
// returns a count synchronises the stream; nothing else waits.
//
// One step, for every bucket in launch order:
//   plan = c.plan(bucket, n)                    identical on every rank
//   c.encode(bucket, plan, n, payload)          dense part into payload.dense, pairs into
//                                               payload.sparse; updates the residuals
//   (plugin) allreduce payload.dense; the sparse part by allgatherv, or by split
//                                               (payload.sparse_to, SparseReselector)
//   decode_bucket(bucket, plan, ...)            the reduced values back into bucket.data
// A plan with low-rank tensors (powersgd) runs a second round in between: encode() writes each
// one's P after the dense part, which is summed with it; project() turns the sums into Q, which a
// second allreduce sums; reconstruct() writes P Q^T into the bucket (Note [PowerSGD]); both are
// LowRankRound's (Note [Compressor capabilities]).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "compressors/bucket_view.h"
#include "compressors/capabilities.h"
#include "compressors/exchange_plan.h"
#include "compressors/kind.h"
#include "compressors/sparse_message.h"
#include "kernels/half.h"
#include "kernels/stream.h"

namespace gw::compressors {

// Where encode() writes. The dense part is the plan's dense tensors concatenated in plan order,
// as fp32 (f32) or fp16 (f16) per plan.dense_wire. When the whole bucket is dense fp32, f32 may be
// bucket.data itself (the exchange then runs in place); encode() must allow that aliasing, which
// holds when each dense tensor is written at its own offset after it was read.
struct EncodedBucket {
  float* f32 = nullptr;
  Half* f16 = nullptr;
  std::size_t dense_count = 0;
  SparseMessageWriter* sparse = nullptr;
  // Under SparseAlgo::kSplit: one writer per rank, in rank order, each given the pairs of that
  // rank's index range of every sparse tensor (indices relative to the range), instead of sparse.
  std::vector<SparseMessageWriter>* sparse_to = nullptr;
  // The P factor of each of the plan's low_rank tensors, in plan order (plan.p_count() floats):
  // right after the dense part (f32 + dense_count), so that one allreduce sums both.
  float* factors = nullptr;
};

class Compressor {
 public:
  virtual ~Compressor() = default;

  // The GRADWIRE_COMPRESSOR value this compressor implements.
  virtual Kind kind() const = 0;
  std::string name() const { return to_string(kind()); }

  // Called once per step before the step's first bucket; steps count from 0.
  virtual void begin_step(std::int64_t step) { step_ = step; }
  std::int64_t step() const { return step_; }

  // Where the compressor works from now on: its state moves to the stream's memory (values kept),
  // and encode() and decode run their primitives on it, over buckets in that memory.
  // See Note [Compressors on a stream]. The host stream until this is called.
  void set_stream(const kernels::Stream& stream) {
    move_state_to(stream);
    stream_ = stream;
  }
  const kernels::Stream& stream() const { return stream_; }

  // The first step whose exchange has its steady-state size (after any warm-up); reports measure
  // per-step bytes from here.
  virtual std::int64_t warmup_end_step() const { return 0; }

  // How `bucket` travels this step: see Note [Plans agree across ranks]. Fills `out` (cleared
  // first), so a caller that keeps one plan per bucket allocates nothing in steady state.
  virtual void plan_into(const BucketView& bucket, int world_size, ExchangePlan& out) const = 0;
  ExchangePlan plan(const BucketView& bucket, int world_size) const {
    ExchangePlan p;
    plan_into(bucket, world_size, p);
    return p;
  }

  // Turns this rank's gradients in `bucket` into what it sends, updating the compressor's state.
  virtual void encode(const BucketView& bucket, const ExchangePlan& plan, int world_size,
                      const EncodedBucket& out) = 0;

  // What the exchange's algorithms need beyond encode, where this compressor has it; null
  // otherwise (See Note [Compressor capabilities]).
  virtual SparseReselector* reselector() { return nullptr; }
  virtual LowRankRound* low_rank() { return nullptr; }

  // The compressor's state as an opaque byte stream; load_state() throws std::runtime_error on a
  // stream written by another compressor or for another layout, leaving the state unchanged.
  virtual void save_state(std::ostream& out) const = 0;
  virtual void load_state(std::istream& in) = 0;

 protected:
  // Moves the compressor's state arrays to `stream`'s memory; nothing for a stateless one.
  virtual void move_state_to(const kernels::Stream& /*stream*/) {}

  std::int64_t step_ = 0;
  kernels::Stream stream_ = kernels::Stream::host();
};

// The compressor's save_state as bytes, and load_state from them: for callers built apart from
// this library (the PyTorch bridge, python/csrc), which hand strings across rather than standard
// streams (Note [Strings across the bridge], python/csrc/ddp_hook.h).
std::string state_bytes(const Compressor& compressor);
void load_state_bytes(Compressor& compressor, const std::string& bytes);

// After the dense allreduce: writes the reduced dense part back into the bucket's dense tensors
// (nothing to do when the exchange ran in place; fp16 is cast back to fp32), on `stream`.
void decode_dense(const BucketView& bucket, const ExchangePlan& plan, const EncodedBucket& reduced,
                  const kernels::Stream& stream = kernels::Stream::host());

}  // namespace gw::compressors
