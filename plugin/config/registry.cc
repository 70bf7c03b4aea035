#include "plugin/config/registry.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace gw::config {
namespace {

std::string format_number(double v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, res.ptr);
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Text as it can be shown in one line of a message: control characters written as C escapes, so
// a rejected "a<newline>b" reads as 'a\nb'.
std::string printable(std::string_view text) {
  std::string out;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out;
}

// The first control character of `text` (below 0x20, or DEL), or npos.
std::size_t find_control(std::string_view text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7F) return i;
  }
  return std::string_view::npos;
}

[[noreturn]] void reject(const ParamSpec& spec, std::string_view text, const std::string& why) {
  std::ostringstream msg;
  msg << spec.key << "='" << printable(text) << "' is not valid";
  if (!why.empty()) msg << " (" << why << ")";
  msg << "; accepted: " << spec.accepted();
  throw ConfigError(msg.str());
}

// Parses a whole string as a finite double: no spaces, no hex, no inf/nan, nothing left over.
bool parse_double(std::string_view text, double* out) {
  if (text.empty() || text.find_first_of("xXpP \t\n") != std::string_view::npos) return false;
  double v = 0;
  auto res = std::from_chars(text.data(), text.data() + text.size(), v);
  if (res.ec != std::errc() || res.ptr != text.data() + text.size()) return false;
  if (!std::isfinite(v)) return false;
  *out = v;
  return true;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t subst = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

namespace {
// ConfigError objects thrown on every rank that exist now (the exception object lives from the
// throw to the end of the handler that catches it).
std::atomic<int> g_every_rank_errors{0};
}  // namespace

ConfigError::ConfigError(const std::string& what, OnEveryRank)
    : std::runtime_error(what), every_rank_(true) {
  ++g_every_rank_errors;
}

ConfigError::ConfigError(const std::string& what, SameOnEveryRank)
    : ConfigError(what, OnEveryRank{}) {
  same_text_ = true;
}

ConfigError::ConfigError(const ConfigError& other)
    : std::runtime_error(other), every_rank_(other.every_rank_), same_text_(other.same_text_) {
  if (every_rank_) ++g_every_rank_errors;
}

ConfigError& ConfigError::operator=(const ConfigError& other) {
  if (this == &other) return *this;
  if (every_rank_) --g_every_rank_errors;
  std::runtime_error::operator=(other);
  every_rank_ = other.every_rank_;
  same_text_ = other.same_text_;
  if (every_rank_) ++g_every_rank_errors;
  return *this;
}

ConfigError::~ConfigError() {
  if (every_rank_) --g_every_rank_errors;
}

bool ConfigError::every_rank_error_alive() { return g_every_rank_errors.load() > 0; }

std::string ParamSpec::accepted() const {
  std::ostringstream out;
  switch (type) {
    case ParamType::kBool:
      return "0 or 1 (also true/false, yes/no, on/off)";
    case ParamType::kInt:
      out << "an integer in [" << format_number(min) << ", " << format_number(max) << "]";
      return out.str();
    case ParamType::kFloat:
      out << "a number in [" << format_number(min) << ", " << format_number(max) << "]";
      return out.str();
    case ParamType::kEnum: {
      out << "one of: ";
      for (std::size_t i = 0; i < choices.size(); ++i) out << (i ? ", " : "") << choices[i];
      return out.str();
    }
    case ParamType::kString:
      return allow_empty ? "a string without control characters (may be empty)"
                         : "a non-empty string without control characters";
    case ParamType::kFloatList:
      out << "a comma-separated list of numbers, each in [" << format_number(min) << ", "
          << format_number(max) << "]";
      return out.str();
  }
  return "";
}

void Registry::add(ParamSpec spec) {
  if (spec.key.rfind("GRADWIRE_", 0) != 0) {
    throw std::logic_error("config parameter '" + spec.key + "' must start with GRADWIRE_");
  }
  if (find(spec.key) != nullptr) {
    throw std::logic_error("config parameter " + spec.key + " declared twice");
  }
  try {
    parse(spec, spec.default_text);
  } catch (const ConfigError& e) {
    throw std::logic_error(std::string("default of ") + spec.key + " does not parse: " + e.what());
  }
  params_.push_back(std::move(spec));
}

const ParamSpec* Registry::find(std::string_view key) const {
  for (const auto& p : params_) {
    if (p.key == key) return &p;
  }
  return nullptr;
}

Value Registry::parse(const ParamSpec& spec, std::string_view text) const {
  switch (spec.type) {
    case ParamType::kBool: {
      const std::string t = lower(text);
      if (t == "1" || t == "true" || t == "yes" || t == "on") return true;
      if (t == "0" || t == "false" || t == "no" || t == "off") return false;
      reject(spec, text, "");
    }
    case ParamType::kInt: {
      std::int64_t v = 0;
      auto res = std::from_chars(text.data(), text.data() + text.size(), v);
      if (text.empty() || res.ec == std::errc::invalid_argument)
        reject(spec, text, "not an integer");
      if (res.ec == std::errc::result_out_of_range) reject(spec, text, "out of range");
      if (res.ptr != text.data() + text.size()) {
        reject(spec, text,
               "unexpected '" + std::string(res.ptr, text.data() + text.size()) +
                   "' after the number; units are not accepted");
      }
      if (static_cast<double>(v) < spec.min || static_cast<double>(v) > spec.max) {
        reject(spec, text, "out of range");
      }
      return v;
    }
    case ParamType::kFloat: {
      double v = 0;
      if (!parse_double(text, &v)) reject(spec, text, "not a finite number");
      if (v < spec.min || v > spec.max) reject(spec, text, "out of range");
      return v;
    }
    case ParamType::kEnum: {
      for (const auto& c : spec.choices) {
        if (text == c) return std::string(text);
      }
      reject(spec, text, "");
    }
    case ParamType::kString: {
      if (text.empty() && !spec.allow_empty) reject(spec, text, "empty");
      // A newline would split the canonical KEY=value text that ranks compare into other lines
      // (and other keys); no control character belongs in a list of names or a path.
      const std::size_t bad = find_control(text);
      if (bad != std::string_view::npos) {
        reject(spec, text,
               "a control character, " + printable(text.substr(bad, 1)) + ", at byte " +
                   std::to_string(bad + 1));
      }
      return std::string(text);
    }
    case ParamType::kFloatList: {
      std::vector<double> values;
      std::size_t start = 0;
      while (true) {
        const std::size_t comma = text.find(',', start);
        const std::string_view item =
            text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
        double v = 0;
        if (!parse_double(item, &v)) {
          reject(spec, text,
                 "element " + std::to_string(values.size() + 1) + " '" + std::string(item) +
                     "' is not a finite number");
        }
        if (v < spec.min || v > spec.max) {
          reject(spec, text, "element " + std::to_string(values.size() + 1) + " out of range");
        }
        values.push_back(v);
        if (comma == std::string_view::npos) break;
        start = comma + 1;
      }
      return values;
    }
  }
  reject(spec, text, "unknown parameter type");
}

std::string Registry::suggest(std::string_view unknown) const {
  std::string best;
  std::size_t best_distance = std::string::npos;
  for (const auto& p : params_) {
    const std::size_t d = edit_distance(unknown, p.key);
    if (d < best_distance) {
      best_distance = d;
      best = p.key;
    }
  }
  // Close means a few typos, scaled with the length of the part after the prefix.
  const std::size_t tail = unknown.size() > 9 ? unknown.size() - 9 : 0;
  const std::size_t tolerance = std::max<std::size_t>(2, tail / 3);
  return best_distance <= tolerance ? best : std::string();
}

std::string Registry::unknown_key_message(std::string_view key) const {
  std::string msg = "unknown variable " + printable(key);
  const std::string hint = suggest(key);
  if (!hint.empty()) msg += "; did you mean " + hint + "?";
  msg += " (gradwire_train --print-config lists every GRADWIRE_* variable)";
  return msg;
}

std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t h = 1469598103934665603ull;
  for (const unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string to_text(const Value& value) {
  struct Visitor {
    std::string operator()(bool v) const { return v ? "1" : "0"; }
    std::string operator()(std::int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return format_number(v); }
    std::string operator()(const std::string& v) const { return v; }
    std::string operator()(const std::vector<double>& v) const {
      std::string out;
      for (std::size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + format_number(v[i]);
      return out;
    }
  };
  return std::visit(Visitor{}, value);
}

}  // namespace gw::config
