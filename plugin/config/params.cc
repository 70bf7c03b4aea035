#include "plugin/config/params.h"

#include <array>
#include <cstddef>
#include <iterator>
#include <string_view>

namespace gw::config {
namespace {

// The most choices a kEnum may list; one_of() refuses more at compile time.
constexpr std::size_t kMaxChoices = 8;

// What a parameter accepts besides its type: a range or a kEnum's choices (the `accepted` column
// of params.def). Constexpr data, turned into a ParamSpec's min, max and choices at startup.
struct Accepted {
  double min = 0;
  double max = 0;
  std::array<std::string_view, kMaxChoices> choices{};
  std::size_t choice_count = 0;
};

constexpr Accepted range(double min, double max) { return Accepted{min, max, {}, 0}; }

template <typename... Choice>
constexpr Accepted one_of(Choice... choices) {
  static_assert(sizeof...(Choice) <= kMaxChoices, "more choices than kMaxChoices");
  return Accepted{0, 0, {std::string_view(choices)...}, sizeof...(Choice)};
}

// kBool and kString: what is accepted follows from the type (and kAllowEmpty) alone.
constexpr Accepted by_type() { return Accepted{}; }

enum ParamFlags : unsigned { kNoFlags = 0, kRankLocal = 1u << 0, kAllowEmpty = 1u << 1 };

// One GW_PARAM of params.def as constexpr data, so that the checks below run at compile time.
struct ParamDecl {
  std::string_view key;
  ParamType type;
  std::string_view default_text;
  Accepted accepted;
  unsigned flags;
  std::string_view description;
};

constexpr ParamDecl kParams[] = {
#define GW_PARAM(name, key, type, default_text, accepted, flags, description) \
  ParamDecl{key, ParamType::type, default_text, accepted, flags, description},
#include "plugin/config/params.def"
#undef GW_PARAM
};

// A key declared twice, or without the GRADWIRE_ prefix, stops the build rather than the program
// (Note [Declaring a parameter]). One static_assert per declaration, so that the compiler's
// message names the key and the lines of params.def that declare it.
constexpr int declarations_of(std::string_view key) {
  int n = 0;
  for (const ParamDecl& p : kParams) n += p.key == key ? 1 : 0;
  return n;
}
#define GW_PARAM(name, key, ...)                                                             \
  static_assert(declarations_of(key) == 1, key " is declared more than once in params.def"); \
  static_assert(std::string_view(key).substr(0, 9) == "GRADWIRE_",                           \
                key " must start with GRADWIRE_");
#include "plugin/config/params.def"
#undef GW_PARAM

ParamSpec to_spec(const ParamDecl& d) {
  ParamSpec p;
  p.key = std::string(d.key);
  p.type = d.type;
  p.default_text = std::string(d.default_text);
  for (std::size_t i = 0; i < d.accepted.choice_count; ++i) {
    p.choices.emplace_back(d.accepted.choices[i]);
  }
  p.min = d.accepted.min;
  p.max = d.accepted.max;
  p.rank_local = (d.flags & kRankLocal) != 0;
  p.description = std::string(d.description);
  p.allow_empty = (d.flags & kAllowEmpty) != 0;
  return p;
}

Registry make_registry() {
  Registry r;
  for (const ParamDecl& d : kParams) r.add(to_spec(d));
  return r;
}

}  // namespace

const Registry& registry() {
  static const Registry instance = make_registry();
  return instance;
}

}  // namespace gw::config
