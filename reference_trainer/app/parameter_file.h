// gradwire_train's --save-params file: the final parameters, for comparisons of runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gw::trainer {

// Writes parameters as "GWPARAM1", a uint64 count, then count float32 (little-endian host order),
// atomically (output_file.h).
void save_parameters(const std::vector<float>& values, const std::string& path);
// The size of that file for `count` parameters.
std::uint64_t parameter_file_bytes(std::size_t count);
// Throws std::runtime_error naming the path for a file that is missing, foreign or truncated.
std::vector<float> load_parameters(const std::string& path);

}  // namespace gw::trainer
