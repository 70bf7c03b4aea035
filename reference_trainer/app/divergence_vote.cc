#include "reference_trainer/app/divergence_vote.h"

namespace gw::trainer {

std::optional<DivergenceVote::Diverged> DivergenceVote::after_step(bool bad, bool stuck,
                                                                   double loss, std::int64_t step,
                                                                   bool defer,
                                                                   std::int64_t most_steps,
                                                                   Communicator& comm) {
  if ((bad || stuck) && !bad_) {
    bad_ = true;
    stuck_ = stuck;
    loss_ = loss;
    step_ = step;
  }
  ++steps_;
  if (defer && steps_ < most_steps) return std::nullopt;
  // One 8-byte allreduce: the minimum of rank * 2^40 + step over the ranks that saw one.
  constexpr std::int64_t kSteps = std::int64_t{1} << 40;
  std::int64_t key = bad_ ? comm.rank() * kSteps + step_ % kSteps : comm.size() * kSteps;
  comm.allreduce(&key, 1, DataType::kInt64, ReduceOp::kMin, TrafficKind::kControl);
  Diverged out{static_cast<int>(key / kSteps), key % kSteps, stuck_, loss_};
  *this = DivergenceVote{};
  if (out.rank >= comm.size()) return std::nullopt;
  return out;
}

}  // namespace gw::trainer
