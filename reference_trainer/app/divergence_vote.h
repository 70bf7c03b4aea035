// The ranks' vote on a diverged run (Note [Diverged runs]): each rank's own finding since the last
// vote, and the collective that tells every rank the lowest rank that saw one, and where.
#pragma once

#include <cstdint>
#include <optional>

#include "plugin/comm/communicator.h"

namespace gw::trainer {

class DivergenceVote {
 public:
  struct Diverged {
    int rank = 0;           // the lowest rank that saw a loss that is not finite, or a stuck scale
    std::int64_t step = 0;  // the step where that rank saw it first
    bool stuck = false;     // this rank's finding was a stuck loss scale
    double loss = 0;        // this rank's loss where it saw it first
  };

  // After step `step`: records this rank's finding (`bad`: a loss that is not finite outside a
  // skipped AMP step, or `stuck`), then votes unless `defer` (an exchange in flight) and fewer
  // than `most_steps` steps passed since the last vote. The same calls on every rank.
  std::optional<Diverged> after_step(bool bad, bool stuck, double loss, std::int64_t step,
                                     bool defer, std::int64_t most_steps, Communicator& comm);

 private:
  bool bad_ = false;
  bool stuck_ = false;
  double loss_ = 0;
  std::int64_t step_ = -1;
  std::int64_t steps_ = 0;  // since the last vote
};

}  // namespace gw::trainer
