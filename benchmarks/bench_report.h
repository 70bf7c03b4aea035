// What every benchmark does at the end: a verdict per target and the JSON report (rank 0).
#pragma once

#include <cstdio>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace gw::bench {

inline const char* verdict(bool met) { return met ? "met" : "NOT met"; }

// Writes `report` to `path`; returns the process exit code (2 when it cannot be written).
inline int write_report(const nlohmann::json& report, const std::string& path) {
  std::ofstream out(path);
  out << report.dump(2) << "\n";
  if (!out) {
    std::fprintf(stderr, "cannot write report '%s'\n", path.c_str());
    return 2;
  }
  std::printf("report written to %s\n", path.c_str());
  return 0;
}

}  // namespace gw::bench
