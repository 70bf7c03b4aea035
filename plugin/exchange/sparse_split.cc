#include "plugin/exchange/sparse_split.h"

#include <stdexcept>
#include <string>

namespace gw::exchange {

compressors::SparseReselector& needs_reselector(const SparseInput& in) {
  if (in.reselector == nullptr) {
    throw std::logic_error("bucket " + std::to_string(in.bucket.index) +
                           ": the plan sums its sparse part by split, but the compressor has no "
                           "reselection (Note [Compressor capabilities])");
  }
  return *in.reselector;
}

compressors::SparseInbox& SparseSplit::exchange(Communicator& comm, const SparseInput& in,
                                                TrafficKind kind) {
  compressors::SparseReselector& reselector = needs_reselector(in);
  const compressors::ExchangePlan& plan = in.payload.plan();
  const auto n = static_cast<std::size_t>(comm.size());
  const auto me = static_cast<std::size_t>(comm.rank());

  // Step 1: rank r gets this rank's pairs in its ranges; the sizes go first.
  const std::vector<std::size_t>& out = in.payload.packed_words();
  std::uint32_t* received =
      to_owner_counts_.alltoall(comm, out, 1, mine_, in.bucket, plan, nullptr, in.stream);
  comm.alltoallv(in.payload.packed(), out, received, mine_.words(), DataType::kInt32, kind);

  // Step 2: their sum over this rank's ranges, the largest kept, the rest into the residual.
  const compressors::KeptPairs& kept =
      keeper_.keep(reselector, mine_, in.bucket, plan, n, me, in.stream);

  // Step 3: every rank's kept pairs to every rank; each is checked against its sender's ranges
  // by the decode, before anything is written.
  const auto length = static_cast<std::int64_t>(kept.message.size());
  std::uint32_t* all_kept = kept_counts_.gather(comm, &length, 1, all_kept_, in.bucket, kept.plan,
                                                nullptr, compressors::SparseInbox::Layout::kRanges,
                                                in.stream);
  in.stream.synchronize();
  comm.allgatherv(kept.message.data(), kept.message.size(), all_kept, all_kept_.words(),
                  DataType::kInt32, kind);
  return all_kept_;
}

}  // namespace gw::exchange
