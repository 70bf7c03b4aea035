// The sizes-first step of every sparse exchange: how many words each sender's message has,
// announced before the messages and checked against the plan's most before anything is received
// (Note [Sparse message format]), so a buffer is sized from counts that are known to be sane.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "compressors/bucket_view.h"
#include "compressors/exchange_plan.h"
#include "compressors/sparse_message.h"
#include "kernels/stream.h"
#include "plugin/comm/communicator.h"

namespace gw::exchange {

// Who sent entry e of a count exchange, for the error that names a bad one: entry e is rank e,
// or senders[e] where given.
using Senders = const std::vector<int>*;

// Every sender's message length, checked (control traffic). A value type: an algorithm keeps one
// per count exchange it runs, reused from step to step.
class MessageCounts {
 public:
  // Each rank announces `blocks` lengths (`mine`), every rank receives all of them, rank-major.
  void gather(Communicator& comm, const std::int64_t* mine, std::size_t blocks,
              const compressors::BucketView& bucket, const compressors::ExchangePlan& plan,
              Senders senders = nullptr);
  // Each rank announces `blocks` lengths to each rank (`out`, destination-major) and receives
  // `blocks` from each, sender-major.
  void alltoall(Communicator& comm, const std::vector<std::int64_t>& out, std::size_t blocks,
                const compressors::BucketView& bucket, const compressors::ExchangePlan& plan,
                Senders senders = nullptr);

  // The checked lengths, one per entry, and their sum.
  const std::vector<std::size_t>& words() const { return words_; }
  std::size_t total() const;
  // The words of the `blocks` entries from each sender, one per sender.
  std::vector<std::size_t> per_sender(std::size_t blocks) const;

 private:
  std::vector<std::int64_t> announced_;
  std::vector<std::size_t> blocks_, words_;
};

// Sends blocks of pairs to every rank of `comm` (counts first) and keeps what arrived.
class MessageAlltoall {
 public:
  // Sends `blocks` messages to each rank, out[d * blocks + j] being the j-th for rank d; each
  // arriving message is checked against `plan`'s most before it is received. Returns the words
  // received, sender-major (counts().words() gives each message's length).
  const std::uint32_t* exchange(Communicator& comm,
                                const std::vector<const compressors::SparseMessageWriter*>& out,
                                std::size_t blocks, const compressors::BucketView& bucket,
                                const compressors::ExchangePlan& plan, Senders senders,
                                TrafficKind kind, const kernels::Stream& stream);
  const MessageCounts& counts() const { return counts_; }
  const std::uint32_t* received() const { return received_.data(); }

 private:
  MessageCounts counts_;
  std::vector<std::int64_t> sizes_;
  kernels::Buffer<std::uint32_t> packed_, received_;
};

}  // namespace gw::exchange
