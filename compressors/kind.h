// The compressors GRADWIRE_COMPRESSOR can name, as an enum: code switches on a Kind, and only
// parse() and to_string() know the spellings.
#pragma once

#include <string_view>

namespace gw::compressors {

enum class Kind { kNone, kFp16, kTopk, kDgc };

// Every kind, in the order the accepted values are listed.
inline constexpr Kind kKinds[] = {Kind::kNone, Kind::kFp16, Kind::kTopk, Kind::kDgc};

// "none", "fp16", "topk", "dgc" (GRADWIRE_COMPRESSOR's values).
const char* to_string(Kind kind);
// Throws std::invalid_argument naming the text and the accepted values.
Kind parse_kind(std::string_view text);

// topk and dgc: per-tensor (index, value) messages, with residuals carried across steps.
constexpr bool is_sparse(Kind kind) { return kind == Kind::kTopk || kind == Kind::kDgc; }

}  // namespace gw::compressors
