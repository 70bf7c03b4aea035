// How the fuzz targets report a broken invariant: they print what was expected and abort, which
// libFuzzer reports as a crash, saving the input as a reproducer.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace gw::fuzz {

[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz invariant violated: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

// For fixed messages; a message built from values is built only on failure:
// if (!holds) fail(...).
inline void check(bool holds, const char* what) {
  if (!holds) fail(what);
}

}  // namespace gw::fuzz
