// A block of environment settings through the strict configuration parser (plugin/config/).
//
// The input is an environment block as /proc/<pid>/environ holds one: NAME=value entries separated
// by NUL bytes, so a value may hold any other byte (newlines and other control characters
// included). Names that do not start with GRADWIRE_ are ignored, as in a real environment.
// Invariants:
// - a rejected block is a ConfigError and leaves the configuration as it was;
// - an accepted one round-trips through the canonical KEY=value text that ranks compare (and hash)
//   at start: that text lists every shared parameter once, parses back to the same values, and
//   applying it to a fresh configuration gives the same text again; every value, rank-local ones
//   included, re-parses to its own canonical text.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "plugin/config/config.h"
#include "plugin/config/params.h"

using gw::fuzz::check;
using gw::fuzz::fail;

namespace {

std::map<std::string, std::string> environment_block(std::string_view data) {
  std::map<std::string, std::string> env;
  std::size_t start = 0;
  while (start <= data.size()) {
    std::size_t end = data.find('\0', start);
    if (end == std::string_view::npos) end = data.size();
    const std::string_view entry = data.substr(start, end - start);
    const std::size_t eq = entry.find('=');
    // The first definition of a name wins, as getenv and apply_process_environment see it.
    if (eq != std::string_view::npos && eq > 0) {
      env.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
    }
    start = end + 1;
  }
  return env;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using gw::config::Config;
  using gw::config::ConfigError;
  const auto env = environment_block(std::string_view(reinterpret_cast<const char*>(data), size));
  static const std::string kDefaults = Config().canonical();

  Config config;
  try {
    config.apply_environment(env);
  } catch (const ConfigError& e) {
    check(config.canonical() == kDefaults, "a rejected block changed the configuration");
    if (std::string_view(e.what()).find("GRADWIRE_") == std::string_view::npos) {
      fail(std::string("the error names no variable: ") + e.what());
    }
    return 0;
  }

  const gw::config::Registry& registry = config.registry();
  const std::string canonical = config.canonical();
  check(config.hash() == gw::config::fnv1a(canonical), "hash() is not the canonical text's hash");
  const auto parsed = gw::config::parse_canonical(canonical);
  std::size_t lines = 0;
  for (const char c : canonical) lines += c == '\n';
  std::size_t shared = 0;
  for (const auto& p : registry.params()) {
    // Every value, rank-local or not, parses back from its canonical text to the same text.
    const std::string text = config.text(p.key);
    std::string again;
    try {
      again = gw::config::to_text(registry.parse(p, text));
    } catch (const ConfigError& e) {
      fail(p.key + "'s canonical text does not parse: " + e.what());
    }
    if (again != text) fail(p.key + ": canonical text '" + text + "' re-parses as '" + again + "'");
    if (p.rank_local) {
      if (parsed.count(p.key) != 0) fail(p.key + " is rank-local but in the canonical text");
      continue;
    }
    ++shared;
    const auto it = parsed.find(p.key);
    if (it == parsed.end()) fail(p.key + " is missing from the canonical text");
    if (it->second != text) {
      fail(p.key + ": the canonical text reads back as '" + it->second + "', the value is '" +
           text + "'");
    }
  }
  if (lines != shared || parsed.size() != shared) {
    fail("the canonical text has " + std::to_string(lines) + " lines and " +
         std::to_string(parsed.size()) + " keys for " + std::to_string(shared) +
         " shared parameters:\n" + canonical);
  }

  Config again;
  try {
    again.apply_environment(parsed);
  } catch (const ConfigError& e) {
    fail(std::string("the canonical text is not an accepted environment: ") + e.what());
  }
  if (again.canonical() != canonical) {
    fail("the canonical text does not round-trip:\n" + canonical + "---- became\n" +
         again.canonical());
  }
  static_cast<void>(config.table());
  return 0;
}
