// Binary checkpoint helpers shared by the compressors' save_state/load_state.
//
// Note [Compressor state format]
// Host byte order: the 8-byte magic "GWCMPST\0", the compressor's name (u32 length + bytes), the
// step (i64), the number of arrays (u64), then each array's element count (u64) and its floats.
// load reads everything into temporaries and checks names and sizes against the live state before
// committing, so a failed load leaves the compressor as it was.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace gw::compressors {

void save_arrays(std::ostream& out, const std::string& owner, std::int64_t step,
                 const std::vector<const std::vector<float>*>& arrays);

// Loads into `arrays` (whose sizes are the expected layout) and `step`; throws
// std::runtime_error naming the mismatch.
void load_arrays(std::istream& in, const std::string& owner, std::int64_t* step,
                 const std::vector<std::vector<float>*>& arrays);

}  // namespace gw::compressors
