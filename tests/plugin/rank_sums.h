// What the multi-rank compressor tests compare against: a vector summed over every rank.
#pragma once

#include <cstddef>
#include <vector>

#include "plugin/comm/communicator.h"

namespace gw::testing {

// Every rank's vector (the same length on each) summed in double, on every rank. Collective.
inline std::vector<double> sum_over_ranks(Communicator& comm, const std::vector<float>& mine) {
  const auto n = static_cast<std::size_t>(comm.size());
  std::vector<float> all(mine.size() * n);
  comm.allgatherv(mine.data(), mine.size(), all.data(), std::vector<std::size_t>(n, mine.size()),
                  DataType::kFloat32, TrafficKind::kControl);
  std::vector<double> sum(mine.size(), 0.0);
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t i = 0; i < mine.size(); ++i) sum[i] += all[r * mine.size() + i];
  }
  return sum;
}

}  // namespace gw::testing
