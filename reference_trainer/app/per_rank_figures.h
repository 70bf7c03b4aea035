// The figures every rank counted, gathered at the end of a run for rank 0's report.
#pragma once

#include "plugin/comm/counting_communicator.h"
#include "plugin/distributed_optimizer.h"
#include "reference_trainer/app/train_result.h"

namespace gw::trainer {

// Every rank's traffic (`traffic`: this rank's run counters, taken before the gather, which is not
// part of the run's traffic) and compression figures, and the communicator's nodes. Collective:
// two allgathers, counted as control traffic.
PerRankResult gather_per_rank(const TrafficCounters& traffic, const CompressionStats& compression,
                              CountingCommunicator& comm);

}  // namespace gw::trainer
