// What topk and dgc share: the warm-up schedule, which tensors are sparsified, the fallback to a
// dense exchange, and sending the top-k of an accumulator with error feedback.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "compressors/compressor.h"
#include "compressors/sparsity_schedule.h"
#include "kernels/stream.h"
#include "kernels/topk.h"

namespace gw::compressors {

struct SparsifyOptions {
  std::vector<double> sparsity = {0.999};  // GRADWIRE_DGC_SPARSITY
  std::int64_t rampup_begin_step = 0;      // GRADWIRE_DGC_RAMPUP_BEGIN_STEP
  std::int64_t rampup_steps = 0;           // GRADWIRE_DGC_RAMPUP_STEPS
  double sample_ratio = 0.01;              // GRADWIRE_DGC_SAMPLE_RATIO
  std::size_t min_numel = 1;               // GRADWIRE_DGC_MIN_NUMEL
  std::size_t min_k = 256;                 // GRADWIRE_DGC_MIN_K
  SparseWire wire = SparseWire::kCompact;  // GRADWIRE_SPARSE_WIRE (compact4, compact2: low-bit)
  // GRADWIRE_SPARSE_ALGO: auto picks split from kSplitFromRanks ranks on
  // (Note [Sparse allreduce by split]); a set value holds at every world size. kPadded: the
  // allgather in one round (Note [Sparse allgather in one round]).
  enum class Algo { kAuto, kAllgather, kSplit, kPadded } algo = Algo::kAuto;
  // Test-only: false keeps the sparse exchange even where a dense one would move fewer bytes, so
  // tests can drive the sparse path at sparsity 0.
  bool dense_fallback = true;
};

class SparsifyingCompressor : public Compressor, public SparseReselector {
 public:
  // numels: every parameter's element count, in registration order. Throws std::invalid_argument
  // on a bad schedule, a sample ratio outside (0, 1], or a tensor of 2^32 elements or more.
  SparsifyingCompressor(std::vector<std::size_t> numels, SparsifyOptions options);

  std::int64_t warmup_end_step() const override { return schedule_.warmup_end_step(); }

  // Note [When sparse falls back to dense]
  // Before the schedule's begin step everything is dense. From it on, tensors of at least
  // min_numel elements (by default all) are sparsified at the scheduled sparsity, each sending at
  // most k pairs (Note [Small tensors in the selection]), and the rest stay dense. Each tensor is
  // judged on its own, so that buckets do not change the result
  // (Note [Fusion does not change the result]): the sparse allgatherv makes each rank send the
  // tensor's W = 1 + 2k words to the n - 1 others, 4 (n - 1) W bytes, and an allreduce of its N
  // elements moves 2 (n - 1) / n x 4 N bytes per rank. When n W >= 2 N the dense allreduce moves no
  // more, so the tensor goes dense for this step; when every tensor the schedule would sparsify in
  // a bucket did, the plan says so (dense_fallback, which the reports count). Every input is known
  // before any gradient is (Note [Plans agree across ranks]). On the compact wire W is taken as 2 +
  // k: a word per pair, more than the wire spends at the sparsities SparseWire's tests measure,
  // since a plan cannot see the gaps; with b-bit values (Note [Low-bit wire values]) the same 16
  // bits of gap and b of value, 2 + ceil(k (16 + b) / 32). Under the split
  // (Note [Sparse allreduce by split]) a rank sends about 3 W (n - 1) / n words, so the tensor
  // goes dense when 3 W >= 2 N.
  //
  // Note [Small tensors in the selection]
  // No tensor goes dense only because it is small: every tensor of a bucket takes part in the
  // bucket's sparse message, each with its own top-k. The per-tensor threshold is the
  // normalisation a single bucket-wide threshold lacks: one threshold over a bucket sends the
  // layers whose gradients run large and starves the rest. At sparsity 0.999 a bias or a small
  // output layer would still send one or a handful of elements a step, so k has a floor:
  // k = max(ceil(numel (1 - s)), min(numel, min_k)), all of a tensor of min_k elements or fewer.
  // The floor costs a few hundred pairs per small tensor. Its default came from the reference
  // MLP at floors 0, 64 and 256 (docs/STRATEGIES.md, "Small tensors", gives the commands).
  void plan_into(const BucketView& bucket, int world_size, ExchangePlan& out) const override;

  // See SparseReselector (Note [Compressor capabilities]).
  SparseReselector* reselector() override { return this; }
  std::size_t reselect(const TensorSlot& t, float* sums, std::size_t begin, std::size_t len,
                       std::size_t k, SparseWire wire, SparseMessageWriter& out) override;
  std::size_t reselect_among(const TensorSlot& t, float* sums, std::size_t begin,
                             const std::uint32_t* candidates, std::size_t count, std::size_t k,
                             SparseWire wire, SparseMessageWriter& out) override;

  // GRADWIRE_SPARSE_ALGO=auto's choice of split from this world size on.
  // At 3 ranks both send about 2k pairs a rank and the allgatherv applies more of them.
  static constexpr int kSplitFromRanks = 4;

  // Whether parameter p is ever sparsified (and so keeps an accumulator).
  bool sparsifiable(std::size_t p) const { return numels_[p] >= options_.min_numel; }

 protected:
  // Selects about k of the largest |acc[i]| of tensor t (kernels::TopkSelector), appends them to
  // the plan's message on its wire (out.sparse; under split, each rank's range to out.sparse_to),
  // and takes what was sent out of acc (error feedback keeps the rest: on the pairs wire the sent
  // elements become 0, on the compact wire what fp16 dropped stays), on the compressor's stream.
  // Returns how many were sent; their indices are selected()[0, count) (stream memory) until the
  // next call.
  std::size_t send_top_k(float* acc, const TensorSlot& t, std::size_t k, const ExchangePlan& plan,
                         const EncodedBucket& out);
  const std::uint32_t* selected() const { return selected_.data(); }

  // Where parameter p's unsent values accumulate (topk's residual, dgc's v).
  virtual float* feedback(std::size_t parameter) = 0;

  // After x's values at indices[0, count) went out as one segment on `wire`: what was sent is
  // taken out of x (on the pairs wire they become 0; on a compact wire what its values dropped
  // stays).
  void keep_what_the_wire_drops(float* x, const std::uint32_t* indices, std::size_t count,
                                SparseWire wire);

  std::vector<std::size_t> numels_;

 private:
  SparsifyOptions options_;
  SparsitySchedule schedule_;
  kernels::TopkSelector selector_;
  kernels::Buffer<std::uint32_t> selected_;
  kernels::Buffer<std::uint32_t> relative_, starts_;         // split_by_region's
  kernels::Buffer<std::uint32_t> among_keys_, among_pairs_;  // reselect_among's
  std::vector<std::uint32_t> starts_host_;
};

}  // namespace gw::compressors
