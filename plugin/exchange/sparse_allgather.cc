#include "plugin/exchange/sparse_allgather.h"

namespace gw::exchange {

void SparseAllgather::exchange(Communicator& comm, const SparseInput& in, TrafficKind kind) {
  // Each rank's message length first (it sends at most k pairs per tensor, often fewer).
  const compressors::SparseMessageWriter& mine = *in.payload.sparse;
  const auto length = static_cast<std::int64_t>(mine.size());
  counts_.gather(comm, &length, 1, in.bucket, in.plan);
  std::uint32_t* received = received_.reserve_discard(counts_.total(), in.stream);
  comm.allgatherv(mine.data(), mine.size(), received, counts_.words(), DataType::kInt32, kind);
  compressors::validate_sparse_messages(in.bucket, in.plan, received, counts_.words(), segments_,
                                        in.stream);
}

void SparseAllgather::decode(const compressors::BucketView& bucket,
                             const compressors::ExchangePlan& plan,
                             const kernels::Stream& stream) {
  compressors::accumulate_sparse_messages(bucket, plan, received_.data(), segments_, stream);
}

}  // namespace gw::exchange
