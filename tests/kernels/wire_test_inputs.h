// Inputs of the compact sparse wire's tests (kernels/sparse_wire.h), shared by the CPU, Thrust
// (OpenMP) and CUDA tests: ascending index sets that cover the block edges and the extreme
// indices, and hand-made segments with one flaw each.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "kernels/sparse_wire.h"

namespace gw::kernels::wire_inputs {

// `count` distinct indices below numel, ascending; the first is 0 and the last numel - 1 when
// `ends` (count >= 2), so the smallest and the largest index are always tried.
inline std::vector<std::uint32_t> ascending(std::size_t count, std::size_t numel,
                                            std::uint32_t seed, bool ends = true) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint32_t> out;
  if (2 * count >= numel) {
    std::vector<std::uint32_t> all(numel);
    for (std::size_t i = 0; i < numel; ++i) all[i] = static_cast<std::uint32_t>(i);
    std::shuffle(all.begin(), all.end(), rng);
    out.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(count));
  } else {
    std::set<std::uint32_t> chosen;
    if (ends && count >= 2) chosen = {0u, static_cast<std::uint32_t>(numel - 1)};
    std::uniform_int_distribution<std::uint64_t> pick(0, numel - 1);
    while (chosen.size() < count) chosen.insert(static_cast<std::uint32_t>(pick(rng)));
    out.assign(chosen.begin(), chosen.end());
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct Case {
  std::size_t numel;
  std::size_t count;
  std::string name() const {
    return "numel " + std::to_string(numel) + ", " + std::to_string(count) + " pairs";
  }
};

// Block edges (31, 32, 33, 64, 65 pairs), a run of every index (gaps 0: width 0), and the
// sparsities of the reference MLP's two large layers at 0.999.
inline const std::vector<Case> kCases = {
    {1, 0},       {1, 1},       {2, 2},         {31, 31},      {32, 32},   {33, 33},
    {1000, 31},   {1000, 32},   {1000, 33},     {1000, 64},    {1000, 65}, {4099, 4099},
    {100'003, 1}, {100'003, 2}, {802'816, 803}, {524'288, 525}};

// Values where every index can be read, with the binary16 edges among them: 65504 (the largest
// finite), 65519 and 65520 (below and at the rounding edge to infinity), far above it, the
// smallest subnormal and below it, and an infinity and a NaN when `specials`.
inline std::vector<float> values(std::size_t numel, std::uint32_t seed, bool specials) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(numel);
  for (float& x : v) x = normal(rng);
  const float edges[] = {65504.0f, -65519.0f, 65520.0f, -1e30f, 5.96e-8f, 1e-9f, -3.0e-5f};
  for (std::size_t i = 0; i < numel && i < sizeof edges / sizeof edges[0]; ++i) v[i] = edges[i];
  if (specials && numel > 9) {
    v[numel - 1] = std::numeric_limits<float>::infinity();
    v[numel / 2] = std::numeric_limits<float>::quiet_NaN();
  }
  return v;
}

}  // namespace gw::kernels::wire_inputs
