#include "compressors/state_stream.h"

#include <cstring>
#include <istream>
#include <ostream>
#include <stdexcept>

#include "common/binary_stream.h"

namespace gw::compressors {
namespace {

constexpr char kMagic[8] = {'G', 'W', 'C', 'M', 'P', 'S', 'T', '\0'};

using binary::put;

template <typename T>
T get(std::istream& in, const std::string& owner) {
  return binary::get<T>(in, owner + " state");
}

}  // namespace

void save_arrays(std::ostream& out, const std::string& owner, std::int64_t step,
                 const std::vector<const std::vector<float>*>& arrays) {
  out.write(kMagic, sizeof kMagic);
  put<std::uint32_t>(out, static_cast<std::uint32_t>(owner.size()));
  out.write(owner.data(), static_cast<std::streamsize>(owner.size()));
  put<std::int64_t>(out, step);
  put<std::uint64_t>(out, arrays.size());
  for (const auto* a : arrays) {
    put<std::uint64_t>(out, a->size());
    out.write(reinterpret_cast<const char*>(a->data()),
              static_cast<std::streamsize>(a->size() * sizeof(float)));
  }
  if (!out) throw std::runtime_error(owner + " state: error while writing");
}

void load_arrays(std::istream& in, const std::string& owner, std::int64_t* step,
                 const std::vector<std::vector<float>*>& arrays) {
  char magic[8];
  in.read(magic, sizeof magic);
  if (!in || std::memcmp(magic, kMagic, sizeof magic) != 0) {
    throw std::runtime_error(owner + " state: not a gradwire compressor state stream");
  }
  const auto name_size = get<std::uint32_t>(in, owner);
  if (name_size > 64) throw std::runtime_error(owner + " state: corrupt compressor name");
  std::string name(name_size, '\0');
  binary::read_bytes(in, name.data(), name_size, owner + " state");
  if (name != owner) {
    throw std::runtime_error("cannot load " + name + " compressor state into the " + owner +
                             " compressor");
  }
  const auto saved_step = get<std::int64_t>(in, owner);
  const auto count = get<std::uint64_t>(in, owner);
  if (count != arrays.size()) {
    throw std::runtime_error(owner + " state: " + std::to_string(count) + " arrays saved, " +
                             std::to_string(arrays.size()) + " expected for this layout");
  }
  std::vector<std::vector<float>> loaded(arrays.size());
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    const auto size = get<std::uint64_t>(in, owner);
    if (size != arrays[i]->size()) {
      throw std::runtime_error(owner + " state: array " + std::to_string(i) + " has " +
                               std::to_string(size) + " elements, this layout needs " +
                               std::to_string(arrays[i]->size()));
    }
    loaded[i].resize(size);
    binary::read_bytes(in, loaded[i].data(), size * sizeof(float), owner + " state");
  }
  for (std::size_t i = 0; i < arrays.size(); ++i) arrays[i]->swap(loaded[i]);
  *step = saved_step;
}

}  // namespace gw::compressors
