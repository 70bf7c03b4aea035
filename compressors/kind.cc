#include "compressors/kind.h"

#include <stdexcept>
#include <string>

#include "common/enum_names.h"

namespace gw::compressors {

const char* to_string(Kind kind) {
  switch (kind) {
    case Kind::kNone:
      return "none";
    case Kind::kFp16:
      return "fp16";
    case Kind::kTopk:
      return "topk";
    case Kind::kDgc:
      return "dgc";
    case Kind::kPowerSgd:
      return "powersgd";
  }
  return "?";
}

Kind parse_kind(std::string_view text) {
  if (const auto kind = find_by_name(text, kKinds)) return *kind;
  throw std::invalid_argument("unknown compressor '" + std::string(text) + "'; accepted: " +
                              names_of(kKinds));
}

}  // namespace gw::compressors
