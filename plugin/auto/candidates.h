// The candidates GRADWIRE_COMPRESSOR=auto considers, typed, each with the cost model's view of it.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "plugin/auto/accuracy_table.h"
#include "plugin/auto/auto_option.h"
#include "plugin/auto/cost_model.h"
#include "plugin/compressor_factory.h"
#include "plugin/config/config.h"
#include "plugin/optimizer.h"
#include "plugin/parameter_set.h"
#include "plugin/sync_settings.h"

namespace gw {

struct CandidateList {
  std::vector<AutoOption> options;           // in kAutoOrder
  std::vector<autotune::Candidate> models;   // options[i]'s inputs and verdicts (the report's)

  std::size_t size() const { return options.size(); }
  // The position of `option`, or none where it is not a candidate.
  std::optional<std::size_t> index_of(AutoOption option) const;
};

// What the candidates depend on before anything is measured.
struct CandidateContext {
  const config::Config& config;
  const CompressorSettings& settings;
  const SyncSettings& sync;
  const Optimizer& inner;
  const ParameterSet& params;
  const AccuracyTable& accuracy;
  double max_drop_points;  // GRADWIRE_AUTO_MAX_ACCURACY_DROP
};

// Reads GRADWIRE_AUTO_CANDIDATES and lists the candidates in kAutoOrder (local SGD only under
// GRADWIRE_SYNC=auto), each with its accuracy cost where the table has one and why it cannot run
// here where it cannot. Throws config::ConfigError, before anything is sent, for a name auto cannot
// choose, or when no candidate could be chosen whatever is measured.
CandidateList list_candidates(const CandidateContext& context);

// The settings that build `option`'s compressor from the configured ones.
CompressorSettings settings_for(const CompressorSettings& configured, AutoOption option);

}  // namespace gw
