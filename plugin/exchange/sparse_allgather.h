// The sparse part by allgatherv: every rank's whole message to every rank, summed in rank order.
#pragma once

#include "plugin/exchange/message_counts.h"
#include "plugin/exchange/sparse_exchange.h"

namespace gw::exchange {

class SparseAllgather final : public SparseExchange {
 public:
  void exchange(Communicator& comm, const SparseInput& in, TrafficKind kind) override;
  void decode(const compressors::BucketView& bucket, const compressors::ExchangePlan& plan,
              const kernels::Stream& stream) override;

 private:
  MessageCounts counts_;
  kernels::Buffer<std::uint32_t> received_;
  compressors::SparseSegments segments_;
};

}  // namespace gw::exchange
