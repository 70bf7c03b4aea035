#include "compressors/kind.h"

#include <stdexcept>
#include <string>

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
  }
  return "?";
}

Kind parse_kind(std::string_view text) {
  std::string accepted;
  for (Kind k : kKinds) {
    if (text == to_string(k)) return k;
    accepted += (accepted.empty() ? "" : ", ") + std::string(to_string(k));
  }
  throw std::invalid_argument("unknown compressor '" + std::string(text) +
                              "'; accepted: " + accepted);
}

}  // namespace gw::compressors
