// gradwire's own GRADWIRE_* parameters: their registry, and a constant for each key. The
// parameters themselves are declared in params.def (Note [Declaring a parameter]).
#pragma once

#include "plugin/config/registry.h"

// Note [Declaring a parameter]
// Each GRADWIRE_* parameter is written in one place: a GW_PARAM statement in
// plugin/config/params.def that gives the name of its key constant, the key, type, default,
// accepted values, flags and description. That file is a list with no code of its own (an
// X-macro list); each place that includes it first defines GW_PARAM to pick what it needs:
// - below, `inline constexpr const char* kName = "GRADWIRE_..."` in gw::config::keys, the
//   constants the code reads parameters by (config.get_int(keys::kLocalSgdK)). They stay plain
//   const char*, so that messages can be built from them (std::string(keys::kSync) + "=").
// - in params.cc, a constexpr table of the declarations, from which registry() builds its
//   ParamSpecs in the list's order; then a static_assert per declaration over that table.
// So a slip in the list stops the build rather than the program: a name declared twice redefines
// its constant, and the static_asserts name a key declared twice (under two names) or one
// without the GRADWIRE_ prefix. Only a default that does not parse is left to Registry::add, when
// registry() is first built (config_test builds it).
// A new parameter is one GW_PARAM in params.def, read through its keys:: constant; then
// ./gradwire.sh readme-table regenerates the table of docs/CONFIGURATION.md.

namespace gw::config {

// The registry of every gradwire parameter, in params.def's order.
const Registry& registry();

namespace keys {
#define GW_PARAM(name, key, ...) inline constexpr const char* name = key;
#include "plugin/config/params.def"
#undef GW_PARAM
}  // namespace keys

}  // namespace gw::config
