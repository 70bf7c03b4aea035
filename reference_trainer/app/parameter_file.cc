#include "reference_trainer/app/parameter_file.h"

#include <cstring>
#include <fstream>
#include <stdexcept>

#include "reference_trainer/app/output_file.h"

namespace gw::trainer {
namespace {

constexpr char kParamMagic[8] = {'G', 'W', 'P', 'A', 'R', 'A', 'M', '1'};

}  // namespace

void save_parameters(const std::vector<float>& values, const std::string& path) {
  const std::uint64_t count = values.size();
  std::string bytes(kParamMagic, sizeof kParamMagic);
  bytes.append(reinterpret_cast<const char*>(&count), sizeof count);
  bytes.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  write_file_atomically(path, bytes);
}

std::uint64_t parameter_file_bytes(std::size_t count) {
  return sizeof kParamMagic + sizeof(std::uint64_t) + std::uint64_t{count} * sizeof(float);
}

std::vector<float> load_parameters(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read parameters from '" + path + "'");
  char magic[8];
  std::uint64_t count = 0;
  in.read(magic, sizeof magic);
  in.read(reinterpret_cast<char*>(&count), sizeof count);
  if (!in || std::memcmp(magic, kParamMagic, sizeof magic) != 0) {
    throw std::runtime_error("'" + path + "' is not a gradwire parameter file");
  }
  if (count > (std::uint64_t{1} << 34)) {
    throw std::runtime_error("'" + path + "': implausible parameter count " +
                             std::to_string(count));
  }
  std::vector<float> values(count);
  in.read(reinterpret_cast<char*>(values.data()),
          static_cast<std::streamsize>(count * sizeof(float)));
  if (!in) throw std::runtime_error("'" + path + "' is truncated");
  return values;
}

}  // namespace gw::trainer
