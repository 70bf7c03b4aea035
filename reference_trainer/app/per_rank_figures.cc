#include "reference_trainer/app/per_rank_figures.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gw::trainer {
namespace {

// Every rank's `count` figures, rank after rank (control traffic).
std::vector<std::int64_t> gather_fields(const std::int64_t* mine, std::size_t count,
                                        Communicator& comm) {
  const auto n = static_cast<std::size_t>(comm.size());
  std::vector<std::int64_t> all(count * n);
  comm.allgatherv(mine, count, all.data(), std::vector<std::size_t>(n, count), DataType::kInt64,
                  TrafficKind::kControl);
  return all;
}

std::vector<TrafficCounters> gather_traffic(const TrafficCounters& mine, Communicator& comm) {
  constexpr std::size_t kPerKind = 5;
  constexpr std::size_t kKinds = kNumTrafficKinds;
  constexpr std::size_t kFields = kPerKind * kKinds;
  std::int64_t send[kFields];
  for (std::size_t k = 0; k < kKinds; ++k) {
    const TrafficCounters::Kind& c = mine.kinds[k];
    const std::uint64_t fields[kPerKind] = {c.sent_bytes, c.received_bytes, c.calls,
                                            c.inter_node_sent_bytes, c.inter_node_received_bytes};
    for (std::size_t f = 0; f < kPerKind; ++f) {
      send[kPerKind * k + f] = static_cast<std::int64_t>(fields[f]);
    }
  }
  const std::vector<std::int64_t> all = gather_fields(send, kFields, comm);
  std::vector<TrafficCounters> out(static_cast<std::size_t>(comm.size()));
  for (std::size_t r = 0; r < out.size(); ++r) {
    for (std::size_t k = 0; k < kKinds; ++k) {
      const auto field = [&](std::size_t f) {
        return static_cast<std::uint64_t>(all[r * kFields + kPerKind * k + f]);
      };
      TrafficCounters::Kind& c = out[r].kinds[k];
      c.sent_bytes = field(0);
      c.received_bytes = field(1);
      c.calls = field(2);
      c.inter_node_sent_bytes = field(3);
      c.inter_node_received_bytes = field(4);
    }
  }
  return out;
}

// The byte figures differ by rank; the step and exchange counts are the same on every rank
// (Note [Plans agree across ranks]), so they are taken from this rank's.
std::vector<CompressionStats> gather_compression(const CompressionStats& mine, Communicator& comm) {
  constexpr std::size_t kFields = 2;
  const std::int64_t send[kFields] = {static_cast<std::int64_t>(mine.gradient_bytes_after_warmup),
                                      static_cast<std::int64_t>(mine.dense_bytes_per_step)};
  const std::vector<std::int64_t> all = gather_fields(send, kFields, comm);
  std::vector<CompressionStats> out(static_cast<std::size_t>(comm.size()), mine);
  for (std::size_t r = 0; r < out.size(); ++r) {
    out[r].gradient_bytes_after_warmup = static_cast<std::uint64_t>(all[r * kFields]);
    out[r].dense_bytes_per_step = static_cast<std::uint64_t>(all[r * kFields + 1]);
  }
  return out;
}

}  // namespace

PerRankResult gather_per_rank(const TrafficCounters& traffic, const CompressionStats& compression,
                              CountingCommunicator& comm) {
  PerRankResult out;
  out.traffic = gather_traffic(traffic, comm);
  out.node_of_rank = comm.node_of_rank();
  out.compression = gather_compression(compression, comm);
  return out;
}

}  // namespace gw::trainer
