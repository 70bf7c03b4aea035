// What auto measured at step 0 on one rank, and how the ranks combine it into the inputs every
// rank decides from (Note [Choosing at the first step]).
#pragma once

#include <cstddef>
#include <vector>

#include "kernels/stream.h"
#include "plugin/auto/cost_model.h"
#include "plugin/comm/communicator.h"

namespace gw {

// This rank's measurements. Per candidate (Note [The auto cost model]): exchange_s and
// last_exchange_s negative where no real exchange ran; local SGD's for one averaging
// (spread_over_period spreads them over its K steps).
struct AutoMeasured {
  autotune::StepInputs step;
  std::vector<double> codec_s, bytes_per_step, last_codec_s, last_bytes, exchange_s,
      last_exchange_s;

  // Sized for `candidates`, nothing measured yet.
  explicit AutoMeasured(std::size_t candidates = 0);
};

// The measurements as one array, the array back into the step's inputs and each candidate's
// (pure: the cross-rank combine in between is a maximum per element). Throws std::logic_error
// when a per-candidate input has the wrong length.
std::vector<double> pack(const AutoMeasured& m, bool backward_on_host);
void unpack(const std::vector<double>& packed, autotune::StepInputs& step,
            std::vector<autotune::Candidate>& candidates);

// Every rank's inputs become the slowest rank's, the same on every rank: a synchronous step waits
// for its slowest rank. Collective where `comm` has several ranks.
void combine_over_ranks(Communicator& comm, const AutoMeasured& m, bool backward_on_host,
                        autotune::StepInputs& step, std::vector<autotune::Candidate>& candidates,
                        const kernels::Stream& stream);

// Local SGD: what was measured for one averaging, spread over its period.
void spread_over_period(std::vector<autotune::Candidate>& candidates);

}  // namespace gw
