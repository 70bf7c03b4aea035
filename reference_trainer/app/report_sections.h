// The sections of gradwire_train's JSON report that summarize a part of the run: traffic,
// compression, the sync policy, mixed precision and auto's decision (docs/TRAINER.md).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference_trainer/app/train_result.h"

namespace gw::trainer {

// Per traffic kind over the ranks' counters (`steps`: the run's, for per-step figures).
nlohmann::json traffic_json(const std::vector<TrafficCounters>& per_rank,
                            const std::vector<int>& node_of_rank, std::int64_t steps);
nlohmann::json compression_json(const std::vector<CompressionStats>& per_rank,
                                const std::vector<TrafficCounters>& traffic, std::int64_t steps);
// Gradient plus parameter bytes of the busiest rank.
std::uint64_t exchange_bytes_max_rank(const std::vector<TrafficCounters>& traffic);
// `exchanged`: exchange_bytes_max_rank's bytes.
nlohmann::json sync_json(const SyncStats& sync, const std::vector<CompressionStats>& compression,
                         double exchanged, std::int64_t steps);
nlohmann::json amp_json(const AmpResult& amp);
// null without GRADWIRE_COMPRESSOR=auto.
nlohmann::json auto_json(const std::optional<AutoDecision>& decision);

}  // namespace gw::trainer
