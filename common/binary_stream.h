// Binary primitives shared by gradwire's checkpoint streams (optimizer, compressor and sync policy
// state): fixed-size values in host byte order, and reads that fail loudly on a short stream.
// Header-only and below every layer, so pure layers and the plugin alike can use it.
#pragma once

#include <cstddef>
#include <istream>
#include <ostream>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace gw::binary {

template <typename T>
void put(std::ostream& out, const T& value) {
  static_assert(std::is_trivially_copyable_v<T>, "put writes the object's bytes");
  out.write(reinterpret_cast<const char*>(&value), sizeof value);
}

// Reads exactly n bytes into dst; throws std::runtime_error "<context>: stream is truncated"
// otherwise.
inline void read_bytes(std::istream& in, void* dst, std::size_t n, const std::string& context) {
  in.read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
  if (!in || static_cast<std::size_t>(in.gcount()) != n) {
    throw std::runtime_error(context + ": stream is truncated");
  }
}

template <typename T>
T get(std::istream& in, const std::string& context) {
  static_assert(std::is_trivially_copyable_v<T>, "get reads the object's bytes");
  T value{};
  read_bytes(in, &value, sizeof value, context);
  return value;
}

}  // namespace gw::binary
