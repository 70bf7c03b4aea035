#include "plugin/exchange/sparse_allgather.h"

#include <stdexcept>
#include <string>

namespace gw::exchange {

compressors::SparseInbox& SparseAllgather::exchange(Communicator& comm, const SparseInput& in,
                                                    TrafficKind kind) {
  // Each rank's message length first (it sends at most k pairs per tensor, often fewer).
  const compressors::SparseMessageWriter& mine = *in.payload.encoded().sparse;
  const auto length = static_cast<std::int64_t>(mine.size());
  std::uint32_t* received =
      counts_.gather(comm, &length, 1, inbox_, in.bucket, in.payload.plan(), nullptr,
                     compressors::SparseInbox::Layout::kWhole, in.stream);
  comm.allgatherv(mine.data(), mine.size(), received, inbox_.words(), DataType::kInt32, kind);
  return inbox_;
}

compressors::SparseInbox& SparsePadded::exchange(Communicator& comm, const SparseInput& in,
                                                 TrafficKind kind) {
  const compressors::SparseMessageWriter& mine = *in.payload.encoded().sparse;
  const compressors::ExchangePlan& plan = in.payload.plan();
  const std::size_t room = compressors::padded_message_words(in.bucket, plan);
  const std::size_t block = 1 + room;
  const auto n = static_cast<std::size_t>(comm.size());
  if (mine.size() > room) {
    throw std::logic_error("bucket " + std::to_string(in.bucket.index) + ": a sparse message of " +
                           std::to_string(mine.size()) + " words exceeds the " +
                           std::to_string(room) + " its plan allows");
  }
  // This rank's block: its length, its message, zeros.
  std::uint32_t* out = block_.reserve_discard(block, in.stream);
  const auto length = static_cast<std::uint32_t>(mine.size());
  // From the host's stack: a copy from pageable memory has read it before it returns.
  kernels::copy_bytes(out, &length, sizeof length, in.stream);
  kernels::copy_bytes(out + 1, mine.data(), mine.size() * sizeof(std::uint32_t), in.stream);
  kernels::fill_zero(out + 1 + mine.size(), (room - mine.size()) * sizeof(std::uint32_t),
                     in.stream);
  std::uint32_t* all = received_.reserve_discard(n * block, in.stream);
  if (!comm.orders_on(in.stream)) in.stream.synchronize();
  comm.allgatherv(out, block, all, std::vector<std::size_t>(n, block), DataType::kInt32, kind);

  // Every block's length, checked against its room before anything of it is read.
  lengths_.assign(n, 0);
  for (std::size_t r = 0; r < n; ++r) {
    kernels::copy_bytes(&lengths_[r], all + r * block, sizeof(std::uint32_t), in.stream);
  }
  in.stream.synchronize();
  announced_.resize(n);
  for (std::size_t r = 0; r < n; ++r) {
    if (lengths_[r] > room) {
      throw compressors::PayloadError(
          "sparse gradient message from rank " + std::to_string(r) + " (bucket " +
          std::to_string(in.bucket.index) + ") is malformed: its padded block announces " +
          std::to_string(lengths_[r]) + " words; this step's plan allows at most " +
          std::to_string(room));
    }
    announced_[r] = lengths_[r];
  }
  std::uint32_t* into = inbox_.expect(in.bucket, plan, announced_, nullptr,
                                      compressors::SparseInbox::Layout::kWhole, in.stream);
  std::size_t at = 0;
  for (std::size_t r = 0; r < n; ++r) {
    kernels::copy_bytes(into + at, all + r * block + 1, lengths_[r] * sizeof(std::uint32_t),
                        in.stream);
    at += lengths_[r];
  }
  return inbox_;
}

}  // namespace gw::exchange
