#include "reference_trainer/app/config_summary.h"

namespace gw::trainer {
namespace {

constexpr char kRest[] = "--print-config or GRADWIRE_LOG_LEVEL=debug lists every parameter";

std::string header(int ranks) {
  return "gradwire configuration (" + std::to_string(ranks) + (ranks == 1 ? " rank)" : " ranks)");
}

// A value as a shell would need it to read it back as one word.
std::string shown(const std::string& text) {
  if (!text.empty() && text.find_first_of(" \t") == std::string::npos) return text;
  return "'" + text + "'";
}

}  // namespace

std::string config_summary_line(const config::Config& config, int ranks) {
  std::string set;
  for (const config::ParamSpec& p : config.registry().params()) {
    if (config.source(p.key) == config::Source::kDefault) continue;
    set += " " + p.key + "=" + shown(config.text(p.key));
  }
  if (set.empty()) return header(ranks) + ": all defaults (" + kRest + ")\n";
  return header(ranks) + ":" + set + " (everything else default; " + kRest + ")\n";
}

std::string config_full_table(const config::Config& config, int ranks) {
  return header(ranks) + ":\n" + config.table();
}

}  // namespace gw::trainer
