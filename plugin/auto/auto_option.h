// What GRADWIRE_COMPRESSOR=auto can choose among, as a type: code switches on an AutoOption, and
// only parse_auto_option() and to_string() know the spellings.
#pragma once

#include <optional>
#include <string_view>

#include "compressors/kind.h"

namespace gw {

// A compressor, or local SGD (its parameter averaging every GRADWIRE_LOCAL_SGD_K steps, no
// compressor), which auto considers only under GRADWIRE_SYNC=auto.
enum class AutoOption { kNone, kFp16, kDgc, kTopk, kPowerSgd, kLocalSgd };

// The order auto considers them in, simplest first: a tie keeps the earlier
// (Note [The auto cost model]).
inline constexpr AutoOption kAutoOrder[] = {AutoOption::kNone,  AutoOption::kFp16,
                                            AutoOption::kDgc,   AutoOption::kTopk,
                                            AutoOption::kPowerSgd, AutoOption::kLocalSgd};

// "none", "fp16", "dgc", "topk", "powersgd", "local_sgd" (GRADWIRE_AUTO_CANDIDATES' names).
const char* to_string(AutoOption option);
std::optional<AutoOption> parse_auto_option(std::string_view text);
// The compressor the option runs (local SGD averages parameters in fp32: none).
compressors::Kind compressor_of(AutoOption option);

}  // namespace gw
