// Deterministic per-rank sharding of a data set for synchronous data-parallel SGD.
//
// Note [Epoch sharding]
// Every rank computes the same permutation of [0, num_samples) for an epoch, from (seed, epoch)
// alone, so no rank ever sends another an index. Step s of the epoch uses the global batch
// perm[s*B*n, (s+1)*B*n) (B = batch per rank, n = world size) and rank r takes its r-th contiguous
// slice of B. Hence n ranks with batch B see, concatenated in rank order, exactly the batch that
// one rank with batch B*n sees: the equivalence "N ranks with batch B/N == one rank with batch B"
// that the trainer's tests rely on. The incomplete last global batch is dropped so that every rank
// takes the same number of steps. Under gradient accumulation (P backward passes per step,
// Note [Gradient accumulation]) the global batch is B*n*P, and pass p of rank r takes the slice
// that rank r*P + p of n*P ranks would: n ranks of P passes see what n*P ranks of one pass see,
// and rank r's P passes together what its one pass of batch B*P would.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "reference_trainer/data/fashion_mnist.h"

namespace gw::trainer {

class EpochSharder {
 public:
  // Throws std::invalid_argument unless world_size >= 1, 0 <= rank < world_size,
  // batch_per_rank >= 1, passes >= 1 and num_samples >= batch_per_rank * world_size * passes.
  EpochSharder(std::size_t num_samples, int world_size, int rank, std::size_t batch_per_rank,
               std::uint64_t seed, int passes = 1);

  std::size_t num_samples() const { return num_samples_; }
  int world_size() const { return world_size_; }
  int rank() const { return rank_; }
  std::size_t batch_per_rank() const { return batch_per_rank_; }
  // Samples per step over every rank and pass.
  std::size_t global_batch() const { return global_batch_; }
  int passes() const { return passes_; }
  std::uint64_t seed() const { return seed_; }
  std::size_t steps_per_epoch() const { return num_samples_ / global_batch_; }
  // Whether `num_samples` fill one global batch (batch_per_rank x world_size x passes), as the
  // constructor requires; for a caller that must refuse such a run before building one.
  static bool fills_one_global_batch(std::size_t num_samples, int world_size,
                                     std::size_t batch_per_rank, int passes = 1);

  // This rank's batch_per_rank sample indices at (epoch, step) for backward pass `pass`;
  // step < steps_per_epoch() and pass < passes(), else std::out_of_range. The second form writes
  // into `out`, reusing its capacity.
  std::vector<std::size_t> batch(std::uint64_t epoch, std::size_t step);
  void batch(std::uint64_t epoch, std::size_t step, std::vector<std::size_t>& out, int pass = 0);

  // The whole permutation of an epoch (the same on every rank). Valid until the next call for a
  // different epoch. The last epoch's permutation is cached, so these are not thread-safe.
  const std::vector<std::size_t>& permutation(std::uint64_t epoch);

 private:
  std::size_t num_samples_;
  int world_size_;
  int rank_;
  std::size_t batch_per_rank_;
  int passes_;
  std::size_t global_batch_;
  std::uint64_t seed_;
  std::uint64_t cached_epoch_ = 0;
  bool has_cached_ = false;
  std::vector<std::size_t> perm_;
};

// Copies the samples `indices` of `data` into images_out (indices.size() x data.features()) and
// labels_out. Both are resized, never shrunk in capacity, so a warmed-up call does not allocate.
// Throws std::out_of_range for an index >= data.size().
void gather(const Dataset& data, const std::vector<std::size_t>& indices,
            std::vector<float>& images_out, std::vector<std::uint8_t>& labels_out);

}  // namespace gw::trainer
