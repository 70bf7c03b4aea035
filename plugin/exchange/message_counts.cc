#include "plugin/exchange/message_counts.h"

namespace gw::exchange {

std::uint32_t* MessageCounts::gather(Communicator& comm, const std::int64_t* mine,
                                     std::size_t blocks, compressors::SparseInbox& inbox,
                                     const compressors::BucketView& bucket,
                                     const compressors::ExchangePlan& plan, Senders senders,
                                     compressors::SparseInbox::Layout layout,
                                     const kernels::Stream& stream) {
  const auto n = static_cast<std::size_t>(comm.size());
  announced_.resize(n * blocks);
  blocks_.assign(n, blocks);
  comm.allgatherv(mine, blocks, announced_.data(), blocks_, DataType::kInt64,
                  TrafficKind::kControl);
  return inbox.expect(bucket, plan, announced_, senders, layout, stream);
}

std::uint32_t* MessageCounts::alltoall(Communicator& comm, const std::vector<std::size_t>& out,
                                       std::size_t blocks, compressors::SparseInbox& inbox,
                                       const compressors::BucketView& bucket,
                                       const compressors::ExchangePlan& plan, Senders senders,
                                       const kernels::Stream& stream) {
  const auto n = static_cast<std::size_t>(comm.size());
  sent_.assign(out.begin(), out.end());
  announced_.resize(n * blocks);
  blocks_.assign(n, blocks);
  comm.alltoallv(sent_.data(), blocks_, announced_.data(), blocks_, DataType::kInt64,
                 TrafficKind::kControl);
  return inbox.expect(bucket, plan, announced_, senders, compressors::SparseInbox::Layout::kWhole,
                      stream);
}

std::vector<std::size_t> per_destination(const std::vector<std::size_t>& words,
                                         std::size_t blocks) {
  std::vector<std::size_t> out(words.size() / blocks, 0);
  for (std::size_t e = 0; e < words.size(); ++e) out[e / blocks] += words[e];
  return out;
}

}  // namespace gw::exchange
