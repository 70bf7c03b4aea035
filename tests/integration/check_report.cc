// gradwire_check_report REPORT --min /json/pointer=VALUE --max /json/pointer=VALUE ...
// Checks figures in a JSON report (gradwire_train's or a benchmark's) and prints each one, so a
// test asserts on what the report says.
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "report_file.h"

namespace {

bool check(const nlohmann::json& report, const std::string& spec, bool is_min) {
  const auto eq = spec.rfind('=');
  if (eq == std::string::npos) {
    std::fprintf(stderr, "bad check '%s': expected /json/pointer=value\n", spec.c_str());
    return false;
  }
  const std::string pointer = spec.substr(0, eq);
  const double limit = std::stod(spec.substr(eq + 1));
  const nlohmann::json::json_pointer ptr(pointer);
  if (!report.contains(ptr) || !report.at(ptr).is_number()) {
    std::fprintf(stderr, "FAIL %s: missing or not a number\n", pointer.c_str());
    return false;
  }
  const double value = report.at(ptr).get<double>();
  const bool ok = is_min ? value >= limit : value <= limit;
  std::printf("%s %s = %.6g (%s %.6g)\n", ok ? "ok  " : "FAIL", pointer.c_str(), value,
              is_min ? ">=" : "<=", limit);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::string path;
  std::vector<std::string> mins, maxs;
  gw::cli::Parser app{"Check figures in a gradwire JSON report"};
  app.add("report", path).required();
  app.add("--min", mins, "/json/pointer=value: the figure must be at least value");
  app.add("--max", maxs, "/json/pointer=value: the figure must be at most value");
  if (const auto code = app.parse(argc, argv)) return *code;
  nlohmann::json report;
  if (!load_report(path, &report)) return 2;
  bool ok = true;
  for (const auto& m : mins) ok = check(report, m, true) && ok;
  for (const auto& m : maxs) ok = check(report, m, false) && ok;
  return ok ? 0 : 1;
}
