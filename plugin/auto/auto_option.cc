#include "plugin/auto/auto_option.h"

namespace gw {

const char* to_string(AutoOption option) {
  switch (option) {
    case AutoOption::kNone:
      return "none";
    case AutoOption::kFp16:
      return "fp16";
    case AutoOption::kDgc:
      return "dgc";
    case AutoOption::kTopk:
      return "topk";
    case AutoOption::kPowerSgd:
      return "powersgd";
    case AutoOption::kLocalSgd:
      return "local_sgd";
  }
  return "?";
}

std::optional<AutoOption> parse_auto_option(std::string_view text) {
  for (AutoOption o : kAutoOrder) {
    if (text == to_string(o)) return o;
  }
  return std::nullopt;
}

compressors::Kind compressor_of(AutoOption option) {
  switch (option) {
    case AutoOption::kFp16:
      return compressors::Kind::kFp16;
    case AutoOption::kDgc:
      return compressors::Kind::kDgc;
    case AutoOption::kTopk:
      return compressors::Kind::kTopk;
    case AutoOption::kPowerSgd:
      return compressors::Kind::kPowerSgd;
    case AutoOption::kNone:
    case AutoOption::kLocalSgd:
      return compressors::Kind::kNone;
  }
  return compressors::Kind::kNone;
}

}  // namespace gw
