// gradwire_train's JSON report (docs/TRAINER.md) and its short human summary. The report's parts:
// report.cc (the run), report_sections.h (traffic, compression, sync, amp, auto),
// report_summary.cc (the summary).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "plugin/config/config.h"
#include "reference_trainer/app/trainer.h"

namespace gw::trainer {

// The whole report of a run; main.cc adds the topology and the MPI library.
nlohmann::json make_report(const TrainerOptions& options, const config::Config& config,
                           const TrainResult& result);

// Writes `report` to `path` (pretty-printed, atomically: output_file.h); throws std::runtime_error
// naming the path on failure.
void write_report(const nlohmann::json& report, const std::string& path);

// The final summary table printed by rank 0.
std::string summary_text(const nlohmann::json& report);

}  // namespace gw::trainer
