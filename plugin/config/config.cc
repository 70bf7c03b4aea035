#include "plugin/config/config.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "plugin/config/params.h"

extern char** environ;

namespace gw::config {
namespace {

const char* type_name(ParamType t) {
  switch (t) {
    case ParamType::kBool:
      return "bool";
    case ParamType::kInt:
      return "int";
    case ParamType::kFloat:
      return "float";
    case ParamType::kEnum:
      return "enum";
    case ParamType::kString:
      return "string";
    case ParamType::kFloatList:
      return "float list";
  }
  return "?";
}

}  // namespace

const char* to_string(Source source) {
  switch (source) {
    case Source::kDefault:
      return "default";
    case Source::kProgram:
      return "program";
    case Source::kEnvironment:
      return "environment";
  }
  return "?";
}

Config::Config(const Registry& registry) : registry_(&registry) {
  entries_.reserve(registry.params().size());
  for (const auto& p : registry.params()) {
    entries_.push_back(Entry{registry.parse(p, p.default_text), Source::kDefault});
  }
}

Config::Config() : Config(gw::config::registry()) {}

std::size_t Config::index_of(std::string_view key) const {
  const auto& params = registry_->params();
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (params[i].key == key) return i;
  }
  throw ConfigError(registry_->unknown_key_message(key));
}

void Config::set(std::string_view key, std::string_view text) {
  const std::size_t i = index_of(key);
  entries_[i] = Entry{registry_->parse(registry_->params()[i], text), Source::kProgram};
}

void Config::apply_environment(const std::map<std::string, std::string>& env) {
  // Validate everything before changing anything: a bad variable leaves the Config untouched.
  std::vector<std::pair<std::size_t, Value>> updates;
  for (const auto& [key, text] : env) {
    if (key.rfind("GRADWIRE_", 0) != 0) continue;
    const std::size_t i = index_of(key);
    updates.emplace_back(i, registry_->parse(registry_->params()[i], text));
  }
  for (auto& [i, value] : updates) entries_[i] = Entry{std::move(value), Source::kEnvironment};
}

void Config::apply_process_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view kv(*e);
    const std::size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    env.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  apply_environment(env);
}

Config Config::from_environment() {
  Config c;
  c.apply_process_environment();
  return c;
}

const Config::Entry& Config::entry(std::string_view key, ParamType expected) const {
  const std::size_t i = index_of(key);
  const ParamType actual = registry_->params()[i].type;
  const bool compatible =
      actual == expected || (expected == ParamType::kString && actual == ParamType::kEnum);
  if (!compatible) {
    throw std::logic_error(std::string(key) + " is a " + type_name(actual) + ", read as a " +
                           type_name(expected));
  }
  return entries_[i];
}

bool Config::get_bool(std::string_view key) const {
  return std::get<bool>(entry(key, ParamType::kBool).value);
}
std::int64_t Config::get_int(std::string_view key) const {
  return std::get<std::int64_t>(entry(key, ParamType::kInt).value);
}
double Config::get_float(std::string_view key) const {
  return std::get<double>(entry(key, ParamType::kFloat).value);
}
const std::string& Config::get_string(std::string_view key) const {
  return std::get<std::string>(entry(key, ParamType::kString).value);
}
const std::vector<double>& Config::get_float_list(std::string_view key) const {
  return std::get<std::vector<double>>(entry(key, ParamType::kFloatList).value);
}

Source Config::source(std::string_view key) const { return entries_[index_of(key)].source; }
std::string Config::text(std::string_view key) const {
  return to_text(entries_[index_of(key)].value);
}

std::string Config::canonical() const {
  std::string out;
  const auto& params = registry_->params();
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (params[i].rank_local) continue;
    out += params[i].key + "=" + to_text(entries_[i].value) + "\n";
  }
  return out;
}

std::uint64_t Config::hash() const { return fnv1a(canonical()); }

std::string Config::table() const {
  const auto& params = registry_->params();
  std::size_t key_width = 8, value_width = 5;
  for (std::size_t i = 0; i < params.size(); ++i) {
    key_width = std::max(key_width, params[i].key.size());
    value_width = std::max(value_width, to_text(entries_[i].value).size());
  }
  std::ostringstream out;
  out << std::left << std::setw(static_cast<int>(key_width) + 2) << "variable"
      << std::setw(static_cast<int>(value_width) + 2) << "value" << std::setw(13) << "source"
      << "description\n";
  for (std::size_t i = 0; i < params.size(); ++i) {
    out << std::setw(static_cast<int>(key_width) + 2) << params[i].key
        << std::setw(static_cast<int>(value_width) + 2) << to_text(entries_[i].value)
        << std::setw(13) << to_string(entries_[i].source) << params[i].description << "\n";
  }
  return out.str();
}

std::map<std::string, std::string> parse_canonical(const std::string& canonical) {
  std::map<std::string, std::string> out;
  std::istringstream in(canonical);
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

std::string markdown_table(const Registry& registry) {
  std::ostringstream out;
  out << "| variable | type | default | accepted | description |\n";
  out << "|---|---|---|---|---|\n";
  for (const auto& p : registry.params()) {
    out << "| `" << p.key << "` | " << type_name(p.type) << " | `" << p.default_text << "` | "
        << p.accepted() << " | " << p.description << (p.rank_local ? " Rank-local." : "") << " |\n";
  }
  return out.str();
}

}  // namespace gw::config
