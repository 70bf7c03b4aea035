// Reading a JSON report for the report-checking tools; a failure is printed, naming the file.
#pragma once

#include <cstdio>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

inline bool load_report(const std::string& path, nlohmann::json* out) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "cannot read report '%s'\n", path.c_str());
    return false;
  }
  try {
    *out = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "report '%s' is not JSON: %s\n", path.c_str(), e.what());
    return false;
  }
  return true;
}
