// The compressors GRADWIRE_COMPRESSOR can name, as an enum: code switches on a Kind, and only
// parse() and to_string() know the spellings.
#pragma once

#include <string_view>

namespace gw::compressors {

enum class Kind { kNone, kFp16, kTopk, kDgc, kPowerSgd };

// Every kind, in the order the accepted values are listed.
inline constexpr Kind kKinds[] = {Kind::kNone, Kind::kFp16, Kind::kTopk, Kind::kDgc,
                                  Kind::kPowerSgd};

// "none", "fp16", "topk", "dgc", "powersgd" (GRADWIRE_COMPRESSOR's values).
const char* to_string(Kind kind);
// Throws std::invalid_argument naming the text and the accepted values.
Kind parse_kind(std::string_view text);

// topk and dgc: per-tensor (index, value) messages, with residuals carried across steps.
constexpr bool is_sparse(Kind kind) { return kind == Kind::kTopk || kind == Kind::kDgc; }

// topk, dgc and powersgd: each rank keeps what it did not send (error feedback) from step to
// step, so the exchange depends on earlier steps' gradients on this rank.
constexpr bool keeps_residuals(Kind kind) { return is_sparse(kind) || kind == Kind::kPowerSgd; }

}  // namespace gw::compressors
