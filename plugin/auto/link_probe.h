// auto's link probe at step 0 (Note [Choosing at the first step]): small allreduces for the
// latency, then allreduces that double in size until the link's sustained rate shows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/stream.h"
#include "plugin/auto/cost_model.h"
#include "plugin/comm/counting_communicator.h"

namespace gw {

inline constexpr int kLatencyProbes = 5;
inline constexpr std::size_t kFirstProbeFloats = 4096;  // 16 KiB
inline constexpr double kProbeSeconds = 0.06;
inline constexpr double kRefillSeconds = 0.06;

struct LinkMeasurement {
  autotune::Link link;
  std::vector<autotune::ProbePoint> probes;
  std::int64_t collectives = 0;  // the probes' allreduces, and the ones that agree on their times
  std::uint64_t bytes = 0;       // control bytes they sent from this rank
};

// The doubling probes as a function of their timings: from kFirstProbeFloats floats, each twice
// the one before (at most `most`), until one takes kProbeSeconds, reaches `most`, or the link has
// settled (autotune::probes_settled). `probe(floats)` runs one and returns what it sent and how
// long it took, the same on every rank. Pure: the unit tests drive it with a simulated link.
std::vector<autotune::ProbePoint> run_probes(
    double latency_s, std::size_t most,
    const std::function<autotune::ProbePoint(std::size_t floats)>& probe);

// Every rank's values replaced by the maximum over the ranks (control traffic, through stream
// memory: an NCCL communicator takes nothing else).
void max_over_ranks(Communicator& comm, std::vector<double>& values,
                    const kernels::Stream& stream);

// Probes `comm`'s link with allreduces of the first `numel` floats of `gradients` (stream memory),
// each timed on every rank and taken at the slowest rank's time. `across`: count the bytes that
// cross between nodes only (a communicator of several nodes of several ranks). Collective.
LinkMeasurement probe_link(CountingCommunicator& comm, const float* gradients, std::size_t numel,
                           bool across, const kernels::Stream& stream);

}  // namespace gw
