// gradwire_train's JSON report and its short human summary.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "plugin/config/config.h"
#include "reference_trainer/app/trainer.h"

namespace gw::trainer {

nlohmann::json make_report(const TrainerOptions& options, const config::Config& config,
                           const TrainResult& result);

// Writes `report` to `path` (pretty-printed, atomically: output_file.h); throws std::runtime_error
// naming the path on failure.
void write_report(const nlohmann::json& report, const std::string& path);

// The final summary table printed by rank 0.
std::string summary_text(const nlohmann::json& report);

// Writes parameters as "GWPARAM1", a uint64 count, then count float32 (little-endian host order),
// atomically (output_file.h).
void save_parameters(const std::vector<float>& values, const std::string& path);
std::vector<float> load_parameters(const std::string& path);

}  // namespace gw::trainer
