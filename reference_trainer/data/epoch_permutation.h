// The per-epoch shuffle of the data set, identical on every rank, compiler and standard library.
//
// std::mt19937_64's output is fixed by the standard but std::uniform_int_distribution's and
// std::shuffle's are not (libstdc++ and libc++ differ), so the bounded draw and the Fisher-Yates
// shuffle are written here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace gw::trainer {

// A uniform integer in [0, bound) by rejection sampling: unbiased for every bound >= 1.
// Throws std::invalid_argument for bound == 0.
std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t bound);

// The mt19937_64 seed of an epoch: a bijective mix (splitmix64) of seed and epoch, so that
// neighbouring seeds or epochs give unrelated streams.
std::uint64_t epoch_rng_seed(std::uint64_t seed, std::uint64_t epoch);

// Writes into `perm` (reusing its capacity) a permutation of [0, n) that depends only on
// (n, seed, epoch): Fisher-Yates driven by mt19937_64(epoch_rng_seed(seed, epoch)).
void fill_epoch_permutation(std::size_t n, std::uint64_t seed, std::uint64_t epoch,
                            std::vector<std::size_t>& perm);

std::vector<std::size_t> epoch_permutation(std::size_t n, std::uint64_t seed, std::uint64_t epoch);

}  // namespace gw::trainer
