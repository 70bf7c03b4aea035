// The sparse part by allgatherv: every rank's whole message to every rank, summed in rank order.
#pragma once

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

}  // namespace gw::exchange
