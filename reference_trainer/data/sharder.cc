#include "reference_trainer/data/sharder.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "reference_trainer/data/epoch_permutation.h"

namespace gw::trainer {
namespace {

std::size_t checked_global_batch(std::size_t num_samples, int world_size, int rank,
                                 std::size_t batch_per_rank, int passes) {
  if (world_size < 1) {
    throw std::invalid_argument("EpochSharder: world_size must be >= 1, got " +
                                std::to_string(world_size));
  }
  if (rank < 0 || rank >= world_size) {
    throw std::invalid_argument("EpochSharder: rank must be in [0, " + std::to_string(world_size) +
                                "), got " + std::to_string(rank));
  }
  if (batch_per_rank < 1) {
    throw std::invalid_argument("EpochSharder: batch_per_rank must be >= 1, got 0");
  }
  if (passes < 1) {
    throw std::invalid_argument("EpochSharder: passes must be >= 1, got " + std::to_string(passes));
  }
  const std::size_t slots = static_cast<std::size_t>(world_size) * static_cast<std::size_t>(passes);
  if (!EpochSharder::fills_one_global_batch(num_samples, world_size, batch_per_rank, passes)) {
    throw std::invalid_argument(
        "EpochSharder: " + std::to_string(num_samples) +
        " samples do not fill one global batch of batch_per_rank " +
        std::to_string(batch_per_rank) + " x world_size " + std::to_string(world_size) +
        (passes > 1 ? " x passes " + std::to_string(passes) : std::string()) + " = " +
        std::to_string(batch_per_rank * slots) + " samples");
  }
  return batch_per_rank * slots;
}

}  // namespace

bool EpochSharder::fills_one_global_batch(std::size_t num_samples, int world_size,
                                          std::size_t batch_per_rank, int passes) {
  return world_size >= 1 && passes >= 1 &&
         batch_per_rank <=
             num_samples / static_cast<std::size_t>(world_size) / static_cast<std::size_t>(passes);
}

EpochSharder::EpochSharder(std::size_t num_samples, int world_size, int rank,
                           std::size_t batch_per_rank, std::uint64_t seed, int passes)
    : num_samples_(num_samples),
      world_size_(world_size),
      rank_(rank),
      batch_per_rank_(batch_per_rank),
      passes_(passes),
      global_batch_(checked_global_batch(num_samples, world_size, rank, batch_per_rank, passes)),
      seed_(seed) {
  perm_.reserve(num_samples_);
}

const std::vector<std::size_t>& EpochSharder::permutation(std::uint64_t epoch) {
  if (!has_cached_ || cached_epoch_ != epoch) {
    fill_epoch_permutation(num_samples_, seed_, epoch, perm_);
    cached_epoch_ = epoch;
    has_cached_ = true;
  }
  return perm_;
}

void EpochSharder::batch(std::uint64_t epoch, std::size_t step, std::vector<std::size_t>& out,
                         int pass) {
  if (step >= steps_per_epoch()) {
    throw std::out_of_range("EpochSharder::batch: step " + std::to_string(step) +
                            " is past the epoch's " + std::to_string(steps_per_epoch()) + " steps");
  }
  if (pass < 0 || pass >= passes_) {
    throw std::out_of_range("EpochSharder::batch: pass " + std::to_string(pass) + " of " +
                            std::to_string(passes_));
  }
  const std::vector<std::size_t>& perm = permutation(epoch);
  // Pass p of rank r: what rank r*P + p of n*P ranks takes (Note [Epoch sharding]).
  const std::size_t slot = static_cast<std::size_t>(rank_) * static_cast<std::size_t>(passes_) +
                           static_cast<std::size_t>(pass);
  const std::size_t begin = step * global_batch_ + slot * batch_per_rank_;
  const auto first = perm.begin() + static_cast<std::ptrdiff_t>(begin);
  out.assign(first, first + static_cast<std::ptrdiff_t>(batch_per_rank_));
}

std::vector<std::size_t> EpochSharder::batch(std::uint64_t epoch, std::size_t step) {
  std::vector<std::size_t> out;
  batch(epoch, step, out);
  return out;
}

void gather(const Dataset& data, const std::vector<std::size_t>& indices,
            std::vector<float>& images_out, std::vector<std::uint8_t>& labels_out) {
  const std::size_t features = data.features();
  images_out.resize(indices.size() * features);
  labels_out.resize(indices.size());
  for (std::size_t i = 0; i < indices.size(); ++i) {
    const std::size_t sample = indices[i];
    if (sample >= data.size()) {
      throw std::out_of_range("gather: sample index " + std::to_string(sample) +
                              " is out of range for a data set of " + std::to_string(data.size()) +
                              " samples");
    }
    std::copy_n(data.images.begin() + static_cast<std::ptrdiff_t>(sample * features), features,
                images_out.begin() + static_cast<std::ptrdiff_t>(i * features));
    labels_out[i] = data.labels[sample];
  }
}

}  // namespace gw::trainer
