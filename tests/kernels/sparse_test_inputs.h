// Inputs shared by the tests of the sparse, update and trainer primitives (kernels/sparse.h,
// kernels/update.h, kernels/nn.h) on every device: seeded distributions that make selections easy,
// tied or misleading, with inf and NaN where they mean something.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace gw::kernels::test_inputs {

enum class Dist {
  kNormal,
  kUniform,
  kTies,       // values in {0, +-1, +-2}, mostly 0: heavy ties at every threshold
  kZeros,      // all +0 and -0
  kSpecials,   // normal, with about 1 in 100 elements +-inf or NaN
  kWideRange,  // magnitudes 2^-10 .. 2^10, mixed signs
};

inline const std::vector<Dist> kAllDists = {Dist::kNormal, Dist::kUniform,  Dist::kTies,
                                            Dist::kZeros,  Dist::kSpecials, Dist::kWideRange};

inline std::string dist_name(Dist d) {
  switch (d) {
    case Dist::kNormal:
      return "Normal";
    case Dist::kUniform:
      return "Uniform";
    case Dist::kTies:
      return "Ties";
    case Dist::kZeros:
      return "Zeros";
    case Dist::kSpecials:
      return "Specials";
    case Dist::kWideRange:
      return "WideRange";
  }
  return "?";
}

// 0, 1, small, not multiples of 16 or 64, about 1e5 and about 1e6. The ASan tree leaves about 1e6
// out (Note [Sizes under ASan]).
#if defined(__SANITIZE_ADDRESS__)
inline const std::vector<std::size_t> kSizes = {0, 1, 7, 16, 63, 64, 1000, 4099, 100'003};
#else
inline const std::vector<std::size_t> kSizes = {0,  1,    7,    16,      63,
                                                64, 1000, 4099, 100'003, 1'000'003};
#endif
// Note [Sizes under ASan]
// The ASan tree runs these tests for memory errors; the results are compared in ./build, which
// runs every size. A million elements takes the paths a hundred thousand does (more blocks of
// the same loops, more OpenMP chunks of the same kernels), at ten times the instrumented cost;
// the tests that exist for a million elements (ThrustOmpTopk.*OnAMillion) keep it under ASan too.

inline std::vector<float> make_values(Dist d, std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::uniform_int_distribution<int> small_int(-2, 2);
  std::uniform_int_distribution<int> percent(0, 99);
  std::uniform_int_distribution<int> exponent(-10, 10);
  std::vector<float> v(n);
  for (float& x : v) {
    switch (d) {
      case Dist::kNormal:
        x = normal(rng);
        break;
      case Dist::kUniform:
        x = uniform(rng);
        break;
      case Dist::kTies:
        x = percent(rng) < 80 ? 0.0f : static_cast<float>(small_int(rng));
        break;
      case Dist::kZeros:
        x = percent(rng) < 50 ? 0.0f : -0.0f;
        break;
      case Dist::kSpecials: {
        const int p = percent(rng);
        if (p == 0) {
          x = std::numeric_limits<float>::infinity();
        } else if (p == 1) {
          x = -std::numeric_limits<float>::infinity();
        } else if (p == 2) {
          x = std::numeric_limits<float>::quiet_NaN();
        } else {
          x = normal(rng);
        }
        break;
      }
      case Dist::kWideRange:
        x = std::ldexp(uniform(rng), exponent(rng));
        break;
    }
  }
  return v;
}

// n class labels, uniform in [0, classes).
inline std::vector<std::uint8_t> random_labels(std::size_t n, std::size_t classes,
                                               std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::size_t> label(0, classes - 1);
  std::vector<std::uint8_t> labels(n);
  for (auto& l : labels) l = static_cast<std::uint8_t>(label(rng));
  return labels;
}

// n = 16384 in blocks of 16 (the sample's unit): half of them hold large values 2^10 ..
// 2^(10 + spread), so a sample of a few blocks can hold many more of them than v does. A narrow
// spread makes the selector rescan; a very wide one (past the float range: inf) leaves it only the
// exact fallback. With k = 8192 and sample_ratio 0.01 (tests/kernels/topk_select_test.cc and
// thrust_omp_test.cc).
inline std::vector<float> misleading_blocks(std::uint32_t seed, double spread) {
  const std::size_t n = 16384;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> exponent(0.0, spread);
  std::uniform_real_distribution<float> small(-1e-3f, 1e-3f);
  std::vector<float> v(n);
  std::vector<std::size_t> blocks(n / 16);
  for (std::size_t b = 0; b < blocks.size(); ++b) blocks[b] = b;
  std::shuffle(blocks.begin(), blocks.end(), rng);
  for (std::size_t i = 0; i < n; ++i) v[i] = small(rng);
  for (std::size_t b = 0; b < blocks.size() / 2; ++b) {
    for (std::size_t j = 0; j < 16; ++j) {
      v[blocks[b] * 16 + j] = static_cast<float>(std::exp2(10.0 + exponent(rng)));
    }
  }
  return v;
}

// k values worth selecting from n: the extremes, the sampled path's edges (k > 128 samples), and
// DGC's sparsities.
inline std::vector<std::size_t> ks_for(std::size_t n) {
  std::vector<std::size_t> ks = {0, 1, 10, 127, 128, 129, n / 1000, n / 100, n / 10, n / 2};
  if (n > 0) ks.push_back(n - 1);
  ks.push_back(n);
  ks.push_back(n + 3);
  std::sort(ks.begin(), ks.end());
  ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
  return ks;
}

}  // namespace gw::kernels::test_inputs
