#include "reference_trainer/data/epoch_permutation.h"

#include <limits>
#include <numeric>
#include <stdexcept>
#include <utility>

namespace gw::trainer {
namespace {

static_assert(std::mt19937_64::min() == 0 &&
                  std::mt19937_64::max() == std::numeric_limits<std::uint64_t>::max(),
              "uniform_below assumes full 64-bit draws");

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t bound) {
  if (bound == 0) throw std::invalid_argument("uniform_below: bound must be >= 1");
  // 2^64 mod bound: rejecting draws below it leaves a range whose size is a multiple of bound,
  // so `r % bound` hits every value equally often.
  const std::uint64_t threshold = (0 - bound) % bound;
  for (;;) {
    const std::uint64_t r = rng();
    if (r >= threshold) return r % bound;
  }
}

std::uint64_t epoch_rng_seed(std::uint64_t seed, std::uint64_t epoch) {
  return splitmix64(splitmix64(seed) ^ epoch);
}

void fill_epoch_permutation(std::size_t n, std::uint64_t seed, std::uint64_t epoch,
                            std::vector<std::size_t>& perm) {
  perm.resize(n);
  std::iota(perm.begin(), perm.end(), std::size_t{0});
  std::mt19937_64 rng(epoch_rng_seed(seed, epoch));
  for (std::size_t i = n; i > 1; --i) {
    const auto j = static_cast<std::size_t>(uniform_below(rng, i));
    std::swap(perm[i - 1], perm[j]);
  }
}

std::vector<std::size_t> epoch_permutation(std::size_t n, std::uint64_t seed, std::uint64_t epoch) {
  std::vector<std::size_t> perm;
  fill_epoch_permutation(n, seed, epoch, perm);
  return perm;
}

}  // namespace gw::trainer
