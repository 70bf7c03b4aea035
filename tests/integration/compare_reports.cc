// gradwire_compare_reports BASE RUN [--max-drop PTR=V] [--min-ratio BASE_PTR:RUN_PTR=V]
//                                   [--max-ratio BASE_PTR:RUN_PTR=V]
// Compares JSON reports of the same training, for example dense against compressed:
//   --max-drop /final_test_accuracy=0.01     BASE - RUN must be at most 0.01
//   --min-ratio /a:/b=100                    BASE[/a] / RUN[/b] must be at least 100
// BASE and RUN may each be a comma-separated list of reports (runs with different seeds): a
// figure is then the mean over the list, which takes the run-to-run noise of training out of a
// comparison. Every figure and verdict is printed, so the test log shows the measured values.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "report_file.h"

namespace {

using Reports = std::vector<nlohmann::json>;

bool load_all(const std::string& paths, Reports* out) {
  std::size_t start = 0;
  while (start <= paths.size()) {
    const std::size_t comma = std::min(paths.find(',', start), paths.size());
    nlohmann::json r;
    if (!load_report(paths.substr(start, comma - start), &r)) return false;
    out->push_back(std::move(r));
    start = comma + 1;
  }
  return true;
}

// The mean of the figure at `pointer` over the reports.
bool number(const Reports& reports, const std::string& pointer, const char* which, double* out) {
  const nlohmann::json::json_pointer ptr(pointer);
  double sum = 0;
  std::string each;
  for (const auto& report : reports) {
    if (!report.contains(ptr) || !report.at(ptr).is_number()) {
      std::fprintf(stderr, "FAIL %s report: %s missing or not a number\n", which, pointer.c_str());
      return false;
    }
    const double v = report.at(ptr).get<double>();
    sum += v;
    char text[32];
    std::snprintf(text, sizeof text, "%s%.6g", each.empty() ? "" : ", ", v);
    each += text;
  }
  *out = sum / static_cast<double>(reports.size());
  if (reports.size() > 1) {
    std::printf("     %s %s: mean %.6g of %s\n", which, pointer.c_str(), *out, each.c_str());
  }
  return true;
}

// "spec" is "LHS=V"; returns false on a malformed spec.
bool split(const std::string& spec, std::string* lhs, double* limit) {
  const auto eq = spec.rfind('=');
  if (eq == std::string::npos) {
    std::fprintf(stderr, "bad check '%s': expected ...=value\n", spec.c_str());
    return false;
  }
  *lhs = spec.substr(0, eq);
  *limit = std::stod(spec.substr(eq + 1));
  return true;
}

bool check_drop(const Reports& base, const Reports& run, const std::string& spec) {
  std::string ptr;
  double limit = 0, b = 0, r = 0;
  if (!split(spec, &ptr, &limit) || !number(base, ptr, "base", &b) || !number(run, ptr, "run", &r))
    return false;
  const bool ok = b - r <= limit;
  std::printf("%s %s: base %.6g, run %.6g, drop %.6g (<= %.6g)\n", ok ? "ok  " : "FAIL",
              ptr.c_str(), b, r, b - r, limit);
  return ok;
}

bool check_ratio(const Reports& base, const Reports& run, const std::string& spec, bool is_min) {
  std::string pair;
  double limit = 0, b = 0, r = 0;
  if (!split(spec, &pair, &limit)) return false;
  const auto colon = pair.find(':');
  if (colon == std::string::npos) {
    std::fprintf(stderr, "bad ratio '%s': expected /base/pointer:/run/pointer=value\n",
                 spec.c_str());
    return false;
  }
  const std::string bp = pair.substr(0, colon), rp = pair.substr(colon + 1);
  if (!number(base, bp, "base", &b) || !number(run, rp, "run", &r)) return false;
  const double ratio = r != 0 ? b / r : 0.0;
  const bool ok = r != 0 && (is_min ? ratio >= limit : ratio <= limit);
  std::printf("%s base %s = %.6g / run %s = %.6g: ratio %.6g (%s %.6g)\n", ok ? "ok  " : "FAIL",
              bp.c_str(), b, rp.c_str(), r, ratio, is_min ? ">=" : "<=", limit);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::string base_path, run_path;
  std::vector<std::string> drops, min_ratios, max_ratios;
  gw::cli::Parser app{"Compare two gradwire JSON reports (a base run and another)"};
  app.add("base", base_path).required();
  app.add("run", run_path).required();
  app.add("--max-drop", drops, "/ptr=v: base - run must be at most v");
  app.add("--min-ratio", min_ratios, "/base/ptr:/run/ptr=v: base / run must be >= v");
  app.add("--max-ratio", max_ratios, "/base/ptr:/run/ptr=v: base / run must be <= v");
  if (const auto code = app.parse(argc, argv)) return *code;
  Reports base, run;
  if (!load_all(base_path, &base) || !load_all(run_path, &run)) return 2;
  bool ok = true;
  for (const auto& s : drops) ok = check_drop(base, run, s) && ok;
  for (const auto& s : min_ratios) ok = check_ratio(base, run, s, true) && ok;
  for (const auto& s : max_ratios) ok = check_ratio(base, run, s, false) && ok;
  return ok ? 0 : 1;
}
