#include "plugin/exchange/message_counts.h"

#include <algorithm>

namespace gw::exchange {

void MessageCounts::gather(Communicator& comm, const std::int64_t* mine, std::size_t blocks,
                           const compressors::BucketView& bucket,
                           const compressors::ExchangePlan& plan, Senders senders) {
  const auto n = static_cast<std::size_t>(comm.size());
  announced_.resize(n * blocks);
  blocks_.assign(n, blocks);
  comm.allgatherv(mine, blocks, announced_.data(), blocks_, DataType::kInt64,
                  TrafficKind::kControl);
  compressors::check_message_sizes(bucket, plan, announced_, words_, senders);
}

void MessageCounts::alltoall(Communicator& comm, const std::vector<std::int64_t>& out,
                             std::size_t blocks, const compressors::BucketView& bucket,
                             const compressors::ExchangePlan& plan, Senders senders) {
  const auto n = static_cast<std::size_t>(comm.size());
  announced_.resize(n * blocks);
  blocks_.assign(n, blocks);
  comm.alltoallv(out.data(), blocks_, announced_.data(), blocks_, DataType::kInt64,
                 TrafficKind::kControl);
  compressors::check_message_sizes(bucket, plan, announced_, words_, senders);
}

std::size_t MessageCounts::total() const {
  std::size_t total = 0;
  for (std::size_t w : words_) total += w;
  return total;
}

std::vector<std::size_t> MessageCounts::per_sender(std::size_t blocks) const {
  std::vector<std::size_t> out(words_.size() / blocks, 0);
  for (std::size_t e = 0; e < words_.size(); ++e) out[e / blocks] += words_[e];
  return out;
}

const std::uint32_t* MessageAlltoall::exchange(
    Communicator& comm, const std::vector<const compressors::SparseMessageWriter*>& out,
    std::size_t blocks, const compressors::BucketView& bucket,
    const compressors::ExchangePlan& plan, Senders senders, TrafficKind kind,
    const kernels::Stream& stream) {
  sizes_.resize(out.size());
  std::size_t total = 0;
  for (std::size_t e = 0; e < out.size(); ++e) {
    sizes_[e] = static_cast<std::int64_t>(out[e]->size());
    total += out[e]->size();
  }
  counts_.alltoall(comm, sizes_, blocks, bucket, plan, senders);
  // Never null, even with nothing to send: a routed communicator picks its backend from the
  // buffers, and every rank must pick the same (Note [Host buffers beside NCCL]).
  std::uint32_t* packed = packed_.reserve_discard(std::max<std::size_t>(total, 1), stream);
  std::vector<std::size_t> send_words(out.size() / blocks, 0);
  std::size_t at = 0;
  for (std::size_t e = 0; e < out.size(); ++e) {
    kernels::copy_bytes(packed + at, out[e]->data(), out[e]->size() * sizeof(std::uint32_t),
                        stream);
    at += out[e]->size();
    send_words[e / blocks] += out[e]->size();
  }
  std::uint32_t* received =
      received_.reserve_discard(std::max<std::size_t>(counts_.total(), 1), stream);
  stream.synchronize();
  comm.alltoallv(packed, std::move(send_words), received, counts_.per_sender(blocks),
                 DataType::kInt32, kind);
  return received;
}

}  // namespace gw::exchange
