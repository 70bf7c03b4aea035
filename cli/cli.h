// gw::cli: the command lines of gradwire's programs (the reference trainer, the benchmarks, the
// test tools), parsed by CLI11 behind a small interface.
//
// Note [One translation unit includes CLI11]
// CLI11 is header-only: each source that includes it compiles its App, its parser and its
// validators (global objects, built in every such source) again, seconds of compile time per
// source and more in the instrumented trees. Only cli/cli.cc includes it; the programs describe
// their options through this interface, whose templates cli.cc instantiates for the types
// gradwire's options have. The messages, --help and exit codes are CLI11's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace gw::cli {

// One option as added to a Parser; each call returns it again, so they chain.
class Option {
 public:
  explicit Option(CLI::Option* option) : option_(option) {}
  Option& required();
  // --help shows the value the option has before parsing.
  Option& show_default();
  // The value must be one of `choices`.
  Option& one_of(std::vector<std::string> choices);
  // lo <= value <= hi (T: int, std::size_t or double; CLI11's message names the bounds).
  template <typename T>
  Option& range(T lo, T hi);
  Option& non_negative();
  Option& positive();
  // A finite number: CLI11 reads "nan" and "inf" as numbers, and its range checks let NaN through.
  Option& finite();
  // The value may not be empty (a path: `--report ''`, or `--report "$UNSET"`, is an error).
  Option& non_empty();
  // The option may stand without a value; `shown` is the default --help names.
  Option& value_optional(const std::string& shown);

 private:
  CLI::Option* option_;
};

class Parser {
 public:
  explicit Parser(const std::string& description);
  ~Parser();
  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;

  // `name`: "--name" for an option, "name" for a positional argument. T: std::string, an integer
  // (int, std::int64_t, std::uint64_t, std::size_t; read exactly:
  // Note [Whole numbers read exactly]), double or std::vector<std::string>.
  template <typename T>
  Option add(const std::string& name, T& value, const std::string& description = "");
  void add_flag(const std::string& name, bool& value, const std::string& description);

  // Parses the command line. std::nullopt: go on; otherwise the program ends with CLI11's exit
  // code: 0 after --help (printed), non-zero after a bad command line (its message on stderr, or
  // in *error where error is given, for the program to print as it sees fit).
  std::optional<int> parse(int argc, char** argv, std::string* error = nullptr);
  // How many times the option was given.
  std::size_t count(const std::string& name) const;

 private:
  std::unique_ptr<CLI::App> app_;
};

}  // namespace gw::cli
