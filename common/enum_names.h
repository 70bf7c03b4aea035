// Enums spelled as text (GRADWIRE_COMPRESSOR, GRADWIRE_SYNC, GRADWIRE_MPI_WAIT): the lookup of a
// name among an enum's values and the list of accepted names for error messages, written once.
// Each enum provides to_string(E) in its own namespace (found by argument-dependent lookup).
// Header-only and below every layer.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace gw {

// The value of `all` whose to_string() is `text`, if any.
template <typename E, std::size_t N>
std::optional<E> find_by_name(std::string_view text, const E (&all)[N]) {
  for (E e : all) {
    if (text == to_string(e)) return e;
  }
  return std::nullopt;
}

// "a, b, c": the names of `all`, in order.
template <typename E, std::size_t N>
std::string names_of(const E (&all)[N]) {
  std::string out;
  for (E e : all) out += (out.empty() ? "" : ", ") + std::string(to_string(e));
  return out;
}

}  // namespace gw
