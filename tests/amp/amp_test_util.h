// Helpers shared by the amp/ tests.
#pragma once

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace gw::amp::testing {

// The message of the std::invalid_argument that f throws ("" and a failure when it does not).
template <typename F>
std::string invalid_argument_of(F f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << "no std::invalid_argument";
  return "";
}

}  // namespace gw::amp::testing
