#include "plugin/auto/candidates.h"

#include <algorithm>
#include <string>

#include "plugin/config/params.h"

namespace gw {
namespace {

namespace keys = config::keys;

std::vector<std::string> split_names(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::size_t end = comma == std::string::npos ? text.size() : comma;
    out.push_back(text.substr(start, end - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// GRADWIRE_AUTO_CANDIDATES, typed; empty: every option.
std::vector<AutoOption> named_options(const CandidateContext& c) {
  const std::string& listed = c.config.get_string(keys::kAutoCandidates);
  std::vector<AutoOption> named;
  if (listed.empty()) return named;
  for (const std::string& name : split_names(listed)) {
    const std::optional<AutoOption> option = parse_auto_option(name);
    if (!option) {
      throw config::ConfigError(std::string(keys::kAutoCandidates) + "=" + listed + ": '" + name +
                                "' is nothing auto can choose; accepted: a comma list of none, "
                                "fp16, dgc, topk, powersgd, local_sgd (or empty: all)");
    }
    if (*option == AutoOption::kLocalSgd && !c.sync.automatic) {
      throw config::ConfigError(std::string(keys::kAutoCandidates) + "=" + listed +
                                " names local_sgd, which auto chooses only under " + keys::kSync +
                                "=auto (" + keys::kSync + "=" + c.config.text(keys::kSync) +
                                " here)");
    }
    named.push_back(*option);
  }
  return named;
}

// Why `option` cannot run here; empty where it can.
std::string excluded(const CandidateContext& c, AutoOption option) {
  if (option == AutoOption::kDgc && !c.inner.sgd_momentum()) {
    return "needs an SGD inner optimizer (" + c.inner.name() + " is not)";
  }
  if (option == AutoOption::kLocalSgd &&
      c.config.get_string(keys::kGradientReduction) == "sum") {
    return "needs " + std::string(keys::kGradientReduction) +
           "=average (local steps use each rank's own gradient)";
  }
  const std::vector<std::size_t> rows = c.params.rows();
  if (option == AutoOption::kPowerSgd &&
      std::none_of(rows.begin(), rows.end(), [](std::size_t r) { return r > 0; })) {
    return "no parameter was registered with its rows (ParameterSpec::rows)";
  }
  return "";
}

autotune::Candidate model_of(const CandidateContext& c, AutoOption option, bool named) {
  autotune::Candidate m;
  m.name = to_string(option);
  m.named = named;
  const bool local = option == AutoOption::kLocalSgd;
  const std::int64_t parameter =
      option == AutoOption::kPowerSgd ? static_cast<std::int64_t>(c.settings.powersgd.rank)
      : local                         ? c.sync.policy.period
                                      : 0;
  // none is the baseline the others are measured against.
  m.accuracy_known = option == AutoOption::kNone;
  if (const AccuracyEntry* e = c.accuracy.find(option, parameter)) {
    m.accuracy_known = true;
    m.accuracy_drop_points = e->drop_points;
  }
  if (local) m.period = static_cast<double>(c.sync.policy.period);
  m.excluded = excluded(c, option);
  return m;
}

// Whether any could be chosen depends on nothing measured: refuse now, before anything is sent.
void check_some_may_be_chosen(const CandidateContext& c, const CandidateList& list) {
  std::string why;
  for (const autotune::Candidate& m : list.models) {
    if (!m.excluded.empty()) {
      why += "; " + m.name + ": " + m.excluded;
    } else if (m.accuracy_known && m.accuracy_drop_points > c.max_drop_points) {
      why += "; " + m.name + ": lost " + std::to_string(m.accuracy_drop_points) +
             " points in gradwire's accuracy runs";
    } else if (!m.accuracy_known && !m.named) {
      why += "; " + m.name + ": no accuracy run (name it to allow it)";
    } else {
      return;
    }
  }
  throw config::ConfigError(std::string(keys::kCompressor) +
                            "=auto has no candidate it may choose" + why + ". Widen " +
                            keys::kAutoCandidates + " or raise " + keys::kAutoMaxAccuracyDrop +
                            "=" + c.config.text(keys::kAutoMaxAccuracyDrop));
}

}  // namespace

std::optional<std::size_t> CandidateList::index_of(AutoOption option) const {
  for (std::size_t i = 0; i < options.size(); ++i) {
    if (options[i] == option) return i;
  }
  return std::nullopt;
}

CandidateList list_candidates(const CandidateContext& context) {
  const std::vector<AutoOption> named = named_options(context);
  CandidateList list;
  for (AutoOption option : kAutoOrder) {
    if (option == AutoOption::kLocalSgd && !context.sync.automatic) continue;
    const bool is_named = std::find(named.begin(), named.end(), option) != named.end();
    if (!named.empty() && !is_named) continue;
    list.options.push_back(option);
    list.models.push_back(model_of(context, option, is_named));
  }
  check_some_may_be_chosen(context, list);
  return list;
}

CompressorSettings settings_for(const CompressorSettings& configured, AutoOption option) {
  CompressorSettings s = configured;
  s.automatic = false;
  s.kind = compressor_of(option);
  return s;
}

}  // namespace gw
