#include "plugin/exchange/sparse_split.h"

#include <algorithm>
#include <stdexcept>

namespace gw::exchange {

compressors::SparseReselector& needs_reselector(const SparseInput& in) {
  if (in.reselector == nullptr) {
    throw std::logic_error("bucket " + std::to_string(in.bucket.index) +
                           ": the plan sums its sparse part by split, but the compressor has no "
                           "reselection (Note [Compressor capabilities])");
  }
  return *in.reselector;
}

void reselect_range(compressors::SparseReselector& reselector,
                    const compressors::BucketView& bucket, const compressors::ExchangePlan& plan,
                    const compressors::ExchangePlan& budget, std::size_t ranges, std::size_t r,
                    const compressors::BucketView& sums, compressors::SparseMessageWriter& out) {
  for (std::size_t t = 0; t < plan.sparse.size(); ++t) {
    const compressors::TensorSlot& slot = bucket.tensors[plan.sparse[t]];
    const compressors::TensorSlot& part = sums.tensors[plan.sparse[t]];
    reselector.reselect(slot, sums.data + part.offset,
                        compressors::split_range(slot.numel, ranges, r).begin, part.numel,
                        budget.k[t], plan.sparse_wire, out);
  }
}

void SparseSplit::exchange(Communicator& comm, const SparseInput& in, TrafficKind kind) {
  compressors::SparseReselector& reselector = needs_reselector(in);
  const kernels::Stream& stream = in.stream;
  const auto n = static_cast<std::size_t>(comm.size());
  const auto me = static_cast<std::size_t>(comm.rank());

  // Step 1: rank r gets this rank's pairs in its ranges; the sizes go first.
  out_.clear();
  for (const compressors::SparseMessageWriter& w : *in.payload.sparse_to) out_.push_back(&w);
  const std::uint32_t* received =
      to_owners_.exchange(comm, out_, 1, in.bucket, in.plan, nullptr, kind, stream);

  // This rank's ranges, laid out one after another in sums_: what step 1's messages are checked
  // against and summed into.
  float* sums =
      sums_.reserve_discard(std::max<std::size_t>(range_numel(in.bucket, in.plan, n, me), 1),
                            stream);
  lay_out_range(in.bucket, in.plan, n, me, sums, mine_);
  compressors::validate_sparse_messages(mine_, in.plan, received, to_owners_.counts().words(),
                                        segments_, stream);
  compressors::accumulate_sparse_messages(mine_, in.plan, received, segments_, stream);

  // Step 2: keep the largest of the sums; the rest goes back into this rank's residual.
  kept_.prepare(in.plan, n, compressors::split_k, stream);
  reselect_range(reselector, in.bucket, in.plan, kept_.plan, n, me, mine_, kept_.message);

  // Step 3: every rank's kept pairs to every rank, each checked against its sender's ranges.
  const auto length = static_cast<std::int64_t>(kept_.message.size());
  kept_counts_.gather(comm, &length, 1, in.bucket, kept_.plan);
  std::uint32_t* all_kept = all_kept_.reserve(n, kept_counts_.total(), stream);
  stream.synchronize();
  comm.allgatherv(kept_.message.data(), kept_.message.size(), all_kept, kept_counts_.words(),
                  DataType::kInt32, kind);
  std::size_t offset = 0;
  for (std::size_t r = 0; r < n; ++r) {
    all_kept_.set_range(r, offset, kept_counts_.words()[r]);
    offset += kept_counts_.words()[r];
  }
  all_kept_.validate(in.bucket, kept_.plan, nullptr, stream);
}

void SparseSplit::decode(const compressors::BucketView& /*bucket*/,
                         const compressors::ExchangePlan& /*plan*/,
                         const kernels::Stream& stream) {
  all_kept_.accumulate(kept_.plan, stream);
}

}  // namespace gw::exchange
