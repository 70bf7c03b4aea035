// The bytes gradwire.torch's state_dict() carries: a few header lines, then the library's own
// state (a compressor's, a sync policy's), handed across as a string.
//
// Note [Strings across the bridge]
// The bridge is compiled against torch's headers, in the language mode they want (C++20), and
// gradwire's library apart from it (C++17), possibly by another compiler release than the one
// gradwire's CI uses. What crosses between the two is kept to types whose layout does not depend
// on the mode: strings, vectors, maps of strings, gradwire's own classes. A standard stream never
// crosses: the library makes and reads the streams of its save_state/load_state itself
// (compressors::state_bytes, SyncPolicy::state_bytes), and the bridge splits its header lines off
// a string here. Seen on an H200 machine (GCC 13.3, torch 2.11, Python 3.12), 2026-11-30: with
// the bridge's std::ostringstream handed to the library, every state_dict() or load_state_dict()
// of the hook ended the process with SIGSEGV; with strings, the same tests passed there
// (results/gpu/2026-11-30_NVIDIA_H200_f24f087.json, then _686c9c0). GCC 12 here never showed it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gw::torch_bridge {

struct SavedState {
  std::vector<std::string> lines;  // the header lines, without their '\n'
  std::string body;                // everything after them
};

// Splits `lines` header lines off `bytes`; `magic` must be the first. Throws std::runtime_error
// "load_state_dict: not a gradwire <what> state" otherwise.
SavedState split_saved_state(const std::string& bytes, std::size_t lines, const std::string& magic,
                             const std::string& what);

// A header line holding a step: decimal digits, at most 18. Throws as split_saved_state.
std::int64_t saved_step(const std::string& line, const std::string& what);

}  // namespace gw::torch_bridge
