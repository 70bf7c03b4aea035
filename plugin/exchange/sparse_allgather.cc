#include "plugin/exchange/sparse_allgather.h"

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

}  // namespace gw::exchange
