#include "cli/cli.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>

#include <CLI/CLI.hpp>

namespace gw::cli {
namespace {

const CLI::Validator& finite_validator() {
  static const CLI::Validator validator(
      [](std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value)) return "'" + text + "' is not a number";
        if (!std::isfinite(value)) return "'" + text + "' is not a finite number";
        return "";
      },
      "FINITE");
  return validator;
}

// Note [Whole numbers read exactly]
// CLI11 reads "-1" into an unsigned option as its wrap-around and clamps a number past the type's
// end to the end, silently. Every integer option therefore checks its text first: a base-10
// whole number (an optional sign, digits only) that T holds exactly, else CLI11's error for the
// option with the range it accepts.
template <typename T>
CLI::Validator whole_number_validator() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        T value{};
        const char* first = text.data();
        const char* last = first + text.size();
        if (first != last && *first == '+') ++first;
        const auto [end, ec] = std::from_chars(first, last, value);
        if (ec == std::errc() && end == last && first != last) return "";
        return "'" + text + "' is not a whole number from " +
               std::to_string(std::numeric_limits<T>::min()) + " to " +
               std::to_string(std::numeric_limits<T>::max());
      },
      "INTEGER");
}

const CLI::Validator& non_empty_validator() {
  static const CLI::Validator validator(
      [](std::string& text) -> std::string {
        return text.empty() ? "an empty value: name a file (or leave the option out)" : "";
      },
      "NONEMPTY");
  return validator;
}

}  // namespace

Option& Option::non_empty() {
  option_->check(non_empty_validator());
  return *this;
}

Option& Option::required() {
  option_->required();
  return *this;
}

Option& Option::show_default() {
  option_->capture_default_str();
  return *this;
}

Option& Option::one_of(std::vector<std::string> choices) {
  option_->check(CLI::IsMember(std::move(choices)));
  return *this;
}

template <typename T>
Option& Option::range(T lo, T hi) {
  option_->check(CLI::Range(lo, hi));
  return *this;
}
// The fundamental types, so that std::size_t is covered whichever of them it is.
template Option& Option::range<int>(int, int);
template Option& Option::range<unsigned long>(unsigned long, unsigned long);
template Option& Option::range<unsigned long long>(unsigned long long, unsigned long long);
template Option& Option::range<double>(double, double);

Option& Option::non_negative() {
  option_->check(CLI::NonNegativeNumber);
  return *this;
}

Option& Option::positive() {
  option_->check(CLI::PositiveNumber);
  return *this;
}

Option& Option::finite() {
  option_->check(finite_validator());
  return *this;
}

Option& Option::value_optional(const std::string& shown) {
  option_->expected(0, 1)->default_str(shown);
  return *this;
}

Parser::Parser(const std::string& description) : app_(std::make_unique<CLI::App>(description)) {}

Parser::~Parser() = default;

template <typename T>
Option Parser::add(const std::string& name, T& value, const std::string& description) {
  CLI::Option* option = app_->add_option(name, value, description);
  if constexpr (std::is_integral_v<T>) option->check(whole_number_validator<T>());
  return Option(option);
}
template Option Parser::add<std::string>(const std::string&, std::string&, const std::string&);
template Option Parser::add<int>(const std::string&, int&, const std::string&);
template Option Parser::add<long>(const std::string&, long&, const std::string&);
template Option Parser::add<long long>(const std::string&, long long&, const std::string&);
template Option Parser::add<unsigned long>(const std::string&, unsigned long&, const std::string&);
template Option Parser::add<unsigned long long>(const std::string&, unsigned long long&,
                                                const std::string&);
template Option Parser::add<double>(const std::string&, double&, const std::string&);
template Option Parser::add<std::vector<std::string>>(const std::string&, std::vector<std::string>&,
                                                      const std::string&);

void Parser::add_flag(const std::string& name, bool& value, const std::string& description) {
  app_->add_flag(name, value, description);
}

std::optional<int> Parser::parse(int argc, char** argv, std::string* error) {
  try {
    app_->parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (error == nullptr || e.get_exit_code() == 0) return app_->exit(e);
    std::ostringstream out;
    const int code = app_->exit(e, out, out);
    *error = out.str();
    while (!error->empty() && error->back() == '\n') error->pop_back();
    return code;
  }
  return std::nullopt;
}

std::size_t Parser::count(const std::string& name) const { return app_->count(name); }

}  // namespace gw::cli
