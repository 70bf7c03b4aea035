// The registry of typed GRADWIRE_* parameters: each with its key, type, default, accepted values
// and a one-line description, and parsed strictly. gradwire's own are listed in params.def.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace gw::config {

// A user error in the configuration: a malformed or out-of-range value, an unknown name, or
// configurations that differ across ranks. The message names the variable, the value and what is
// accepted.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;

  // An error that every rank of the job throws at the same point, with the same decision (the
  // cross-rank checks of plugin/config_check.h): the job can end through MPI_Finalize, each rank
  // with its own message, instead of MPI_Abort (Note [Ending the job on an error]).
  struct OnEveryRank {};
  ConfigError(const std::string& what, OnEveryRank);
  // The same, with the same message on every rank (a mismatch every rank found): printed once.
  struct SameOnEveryRank {};
  ConfigError(const std::string& what, SameOnEveryRank);
  ConfigError(const ConfigError& other);
  ConfigError& operator=(const ConfigError& other);
  ~ConfigError() override;
  bool thrown_on_every_rank() const { return every_rank_; }
  bool same_on_every_rank() const { return same_text_; }
  // Whether an error thrown on every rank exists in this process now: one in flight, or being
  // handled.
  static bool every_rank_error_alive();

 private:
  bool every_rank_ = false;
  bool same_text_ = false;
};

enum class ParamType { kBool, kInt, kFloat, kEnum, kString, kFloatList };

struct ParamSpec {
  std::string key;  // "GRADWIRE_COMPRESSOR"
  ParamType type = ParamType::kString;
  std::string default_text;          // the default, written as a user would write it
  std::vector<std::string> choices;  // kEnum: the accepted values
  double min = 0;                    // kInt, kFloat, kFloatList (each element): inclusive range
  double max = 0;
  bool rank_local = false;   // may differ across ranks (log level, file paths): not hashed
  std::string description;   // one line
  bool allow_empty = false;  // kString: "" is a value (an empty list), not an error

  // What is accepted, in words: "one of: none, fp16" or "an integer in [1, 64]".
  std::string accepted() const;
};

using Value = std::variant<bool, std::int64_t, double, std::string, std::vector<double>>;

class Registry {
 public:
  // Throws std::logic_error on a duplicate key, a key without the GRADWIRE_ prefix, or a default
  // that does not parse: programming errors. For gradwire's own parameters the first two stop
  // the build already (Note [Declaring a parameter]); the tests build registry() for the third.
  void add(ParamSpec spec);

  const ParamSpec* find(std::string_view key) const;
  const std::vector<ParamSpec>& params() const { return params_; }

  // Strict parse of `text` for `spec`; throws ConfigError naming the key, the value and what is
  // accepted. `64MB` is not an integer, ` 1` is not 1, `nan` is not a number.
  Value parse(const ParamSpec& spec, std::string_view text) const;

  // The registered key closest to `unknown` by edit distance, or "" when none is close.
  std::string suggest(std::string_view unknown) const;

  // "unknown variable GRADWIRE_FOO; did you mean GRADWIRE_BAR?" (the hint only when one is close).
  std::string unknown_key_message(std::string_view key) const;

 private:
  std::vector<ParamSpec> params_;
};

// FNV-1a, 64 bits: the hash ranks compare at start.
std::uint64_t fnv1a(std::string_view text);

// The canonical text of a parsed value ("1" for true, "0.5", "a,b"): what is printed and hashed.
std::string to_text(const Value& value);

}  // namespace gw::config
