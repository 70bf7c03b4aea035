// Every GRADWIRE_* parameter of gradwire, by key. Each is declared once, with its type, default,
// accepted values and description, in params.cc.
#pragma once

#include "plugin/config/registry.h"

namespace gw::config {

// The registry of every gradwire parameter.
const Registry& registry();

namespace keys {
inline constexpr const char* kCompressor = "GRADWIRE_COMPRESSOR";
inline constexpr const char* kSync = "GRADWIRE_SYNC";
inline constexpr const char* kGradientReduction = "GRADWIRE_GRADIENT_REDUCTION";
inline constexpr const char* kBroadcastParameters = "GRADWIRE_BROADCAST_PARAMETERS";
inline constexpr const char* kLogLevel = "GRADWIRE_LOG_LEVEL";
}  // namespace keys

}  // namespace gw::config
