// The effective configuration: every registered parameter's value and where it came from.
//
// Programmatic settings (Config::set) are for library users; the environment overrides them
// (apply_environment), and parsing is strict in both. The canonical text and its hash are what
// ranks compare at start (plugin/config_check.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "plugin/config/registry.h"

namespace gw::config {

enum class Source { kDefault, kProgram, kEnvironment };
const char* to_string(Source source);

class Config {
 public:
  // Every parameter of `registry` at its default. The registry must outlive the Config.
  explicit Config(const Registry& registry);
  // Every gradwire parameter (gw::config::registry()) at its default.
  Config();

  // Sets a parameter programmatically (Source::kProgram). Throws ConfigError for an unknown key
  // (with a "did you mean") or a value that does not parse.
  void set(std::string_view key, std::string_view text);

  // Applies every GRADWIRE_* variable of `env` (Source::kEnvironment), validating all of them
  // first so that nothing is half-applied: an unknown name or a bad value throws ConfigError.
  void apply_environment(const std::map<std::string, std::string>& env);
  // The same over this process's environment.
  void apply_process_environment();

  // A default Config overridden by this process's environment.
  static Config from_environment();

  bool get_bool(std::string_view key) const;
  std::int64_t get_int(std::string_view key) const;
  double get_float(std::string_view key) const;
  const std::string& get_string(std::string_view key) const;  // kString and kEnum
  const std::vector<double>& get_float_list(std::string_view key) const;

  Source source(std::string_view key) const;
  std::string text(std::string_view key) const;  // canonical text of the value

  // "KEY=value\n" for every parameter that must agree across ranks, in registry order.
  std::string canonical() const;
  // FNV-1a 64 of canonical().
  std::uint64_t hash() const;

  // A human table of every parameter: key, value, source, description.
  std::string table() const;

  const Registry& registry() const { return *registry_; }

 private:
  struct Entry {
    Value value;
    Source source = Source::kDefault;
  };
  const Entry& entry(std::string_view key, ParamType expected) const;
  std::size_t index_of(std::string_view key) const;  // throws ConfigError if unknown

  const Registry* registry_;
  std::vector<Entry> entries_;  // parallel to registry_->params()
};

// Parses "KEY=value\n" lines as produced by Config::canonical() into a map.
std::map<std::string, std::string> parse_canonical(const std::string& canonical);

// The Markdown table of every parameter (key, type, default, accepted, description) that the
// README embeds; a test checks the README holds exactly this, so it cannot drift.
std::string markdown_table(const Registry& registry);

}  // namespace gw::config
