// The sizes-first half of every sparse exchange step: the lengths of the messages each rank is
// about to send go first (control traffic), so that the receiving SparseInbox checks them
// against the plan and sizes its buffer from counts known to be sane, before any message moves
// (Note [Sparse message format]).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "compressors/sparse_inbox.h"
#include "plugin/comm/communicator.h"

namespace gw::exchange {

// Who sent entry e of a count exchange, for the error that names a bad one: entry e is rank e,
// or senders[e] where given.
using Senders = const std::vector<int>*;

// One count exchange, a value type an algorithm keeps per step it runs (reused from step to step).
// Each returns the inbox's room for the messages.
class MessageCounts {
 public:
  // Each rank announces `blocks` lengths (`mine`); every rank receives all of them, rank-major.
  std::uint32_t* gather(Communicator& comm, const std::int64_t* mine, std::size_t blocks,
                        compressors::SparseInbox& inbox, const compressors::BucketView& bucket,
                        const compressors::ExchangePlan& plan, Senders senders,
                        compressors::SparseInbox::Layout layout, const kernels::Stream& stream);
  // Each rank announces `blocks` lengths to each rank (`out`, destination-major) and receives
  // `blocks` from each, sender-major.
  std::uint32_t* alltoall(Communicator& comm, const std::vector<std::size_t>& out,
                          std::size_t blocks, compressors::SparseInbox& inbox,
                          const compressors::BucketView& bucket,
                          const compressors::ExchangePlan& plan, Senders senders,
                          const kernels::Stream& stream);

 private:
  std::vector<std::int64_t> sent_, announced_;
  std::vector<std::size_t> blocks_;
};

// Words per destination of `words` (`blocks` per destination, destination-major).
std::vector<std::size_t> per_destination(const std::vector<std::size_t>& words,
                                         std::size_t blocks);

}  // namespace gw::exchange
