// The sparse part by allgatherv: every rank's whole message to every rank, summed in rank order;
// its lengths first (SparseAllgather), or in one round of padded blocks (SparsePadded,
// Note [Sparse allgather in one round], compressors/exchange_plan.h).
#pragma once

#include <cstdint>
#include <vector>

#include "plugin/exchange/message_counts.h"
#include "plugin/exchange/sparse_exchange.h"

namespace gw::exchange {

class SparseAllgather final : public SparseExchange {
 public:
  compressors::SparseInbox& exchange(Communicator& comm, const SparseInput& in,
                                     TrafficKind kind) override;

 private:
  MessageCounts counts_;
  compressors::SparseInbox inbox_;
};

class SparsePadded final : public SparseExchange {
 public:
  compressors::SparseInbox& exchange(Communicator& comm, const SparseInput& in,
                                     TrafficKind kind) override;

 private:
  kernels::Buffer<std::uint32_t> block_, received_;  // in the stream's memory
  std::vector<std::uint32_t> lengths_;
  std::vector<std::int64_t> announced_;
  compressors::SparseInbox inbox_;
};

}  // namespace gw::exchange
