#include "plugin/auto/accuracy_table.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "plugin/config/params.h"
#include "plugin/config/registry.h"

namespace gw {

AccuracyTable AccuracyTable::built_in() {
  // results/auto_accuracy.json as of the last update (Note [Accuracy costs as data]).
  AccuracyTable t;
  t.entries_ = {
      {AutoOption::kFp16, 0, -0.04, 3, "fp16"},
      {AutoOption::kTopk, 0, 2.80, 1, "topk"},
      {AutoOption::kDgc, 0, -0.36, 3, "dgc"},
      {AutoOption::kPowerSgd, 1, 2.07, 3, "powersgd"},
      {AutoOption::kPowerSgd, 4, -0.07, 3, "powersgd_r4"},
      {AutoOption::kLocalSgd, 4, -0.55, 1, "local_sgd_k4"},
      {AutoOption::kLocalSgd, 16, 0.20, 1, "local_sgd_k16"},
      {AutoOption::kLocalSgd, 8, 0.11, 1, "local_sgd"},
  };
  return t;
}

namespace {

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw config::ConfigError(std::string(config::keys::kAutoAccuracyFile) + ": " + where + ": " +
                            what +
                            "; expected {\"entries\": [{\"candidate\": ..., \"parameter\": ..., "
                            "\"drop_points\": ..., \"seeds\": ..., \"strategy\": ...}, ...]} "
                            "(Note [Accuracy costs as data], docs/AUTO.md)");
}

AccuracyEntry parse_entry(const nlohmann::json& e, const std::string& where) {
  if (!e.is_object()) bad(where, "not an object");
  for (const auto& item : e.items()) {
    const std::string& k = item.key();
    if (k != "candidate" && k != "parameter" && k != "drop_points" && k != "seeds" &&
        k != "strategy") {
      bad(where, "unknown field '" + k + "'");
    }
  }
  const auto field = [&](const char* name) -> const nlohmann::json& {
    if (!e.contains(name)) bad(where, std::string("missing field '") + name + "'");
    return e.at(name);
  };
  AccuracyEntry out;
  const nlohmann::json& candidate = field("candidate");
  const auto option = candidate.is_string()
                          ? parse_auto_option(candidate.get<std::string>())
                          : std::nullopt;
  if (!option) {
    bad(where, "'candidate' is " + candidate.dump() +
                   ", not one of none, fp16, dgc, topk, powersgd, local_sgd");
  }
  out.option = *option;
  if (!field("parameter").is_number_integer() || field("parameter").get<std::int64_t>() < 0)
    bad(where, "'parameter' must be a whole number >= 0");
  out.parameter = field("parameter").get<std::int64_t>();
  if (!field("drop_points").is_number()) bad(where, "'drop_points' must be a number");
  out.drop_points = field("drop_points").get<double>();
  if (!field("seeds").is_number_integer() || field("seeds").get<int>() < 1)
    bad(where, "'seeds' must be a whole number >= 1");
  out.seeds = field("seeds").get<int>();
  if (!field("strategy").is_string()) bad(where, "'strategy' must be a string");
  out.strategy = field("strategy").get<std::string>();
  return out;
}

}  // namespace

AccuracyTable AccuracyTable::from_json(const std::string& text, const std::string& where) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    bad(where, std::string("not JSON (") + e.what() + ")");
  }
  if (!doc.is_object() || !doc.contains("entries") || !doc.at("entries").is_array())
    bad(where, "no \"entries\" array");
  AccuracyTable t;
  const nlohmann::json& entries = doc.at("entries");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string at = where + ", entry " + std::to_string(i);
    t.entries_.push_back(parse_entry(entries[i], at));
    const AccuracyEntry& e = t.entries_.back();
    for (std::size_t j = 0; j + 1 < t.entries_.size(); ++j) {
      if (t.entries_[j].option == e.option && t.entries_[j].parameter == e.parameter)
        bad(at, "a second entry for " + std::string(to_string(e.option)) + " at parameter " +
                    std::to_string(e.parameter));
    }
  }
  return t;
}

AccuracyTable AccuracyTable::from_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) bad(path, "cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return from_json(text.str(), path);
}

const AccuracyEntry* AccuracyTable::find(AutoOption option, std::int64_t parameter) const {
  for (const AccuracyEntry& e : entries_) {
    if (e.option == option && e.parameter == parameter) return &e;
  }
  return nullptr;
}

}  // namespace gw
