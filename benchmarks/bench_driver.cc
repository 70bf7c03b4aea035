#include "benchmarks/bench_driver.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <fstream>
#include <utility>

namespace gw::bench {

std::vector<std::vector<double>> rotate(
    const Variants& variants, int iterations,
    const std::function<double(const std::function<void()>&)>& time_one,
    const std::function<void(int)>& after) {
  const std::size_t n = variants.size();
  std::vector<std::vector<double>> times(n, std::vector<double>(iterations));
  for (int it = 0; it < iterations; ++it) {
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t side = (it + k) % n;
      times[side][it] = time_one(variants[side].run);
    }
    if (after) after(it);
  }
  return times;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<double> medians(const std::vector<std::vector<double>>& times) {
  std::vector<double> out;
  for (const std::vector<double>& t : times) out.push_back(median(t));
  return out;
}

void print_path_table(const Variants& variants, const std::vector<double>& median_seconds,
                      double bytes) {
  std::printf("  %-8s %12s %10s\n", "path", "median(ms)", "GB/s");
  for (std::size_t v = 0; v < variants.size(); ++v) {
    std::printf("  %-8s %12.3f %10.2f\n", variants[v].name.c_str(), median_seconds[v] * 1e3,
                bytes / median_seconds[v] / 1e9);
  }
}

nlohmann::json seconds_by_name(const Variants& variants, const std::vector<double>& seconds) {
  nlohmann::json out = nlohmann::json::object();
  for (std::size_t v = 0; v < variants.size(); ++v) out[variants[v].name] = seconds[v];
  return out;
}

std::string format(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  va_list again;
  va_copy(again, args);
  const int size = std::vsnprintf(nullptr, 0, fmt, args);
  va_end(args);
  std::string out(size > 0 ? size : 0, '\0');
  std::vsnprintf(out.data(), out.size() + 1, fmt, again);
  va_end(again);
  return out;
}

Target at_most(std::string measured, double value, double limit, std::string limit_key,
               std::string met_key, const std::string& qualifier) {
  return {std::move(measured), format("at most %g", limit) + qualifier, value <= limit,
          std::move(limit_key), limit, std::move(met_key)};
}

Target at_least(std::string measured, double value, double limit, std::string limit_key,
                std::string met_key) {
  return {std::move(measured), format("at least %g", limit), value >= limit, std::move(limit_key),
          limit, std::move(met_key)};
}

Target no_wrong_elements(std::int64_t wrong) {
  return {format("wrong elements: %lld", static_cast<long long>(wrong)), "0", wrong == 0, "", 0,
          "wrong_met"};
}

void print_verdicts(const std::vector<Target>& targets) {
  for (const Target& t : targets) {
    std::printf("# %s (target: %s) %s\n", t.measured.c_str(), t.target.c_str(),
                t.met ? "met" : "NOT met");
  }
}

nlohmann::json targets_json(const std::vector<Target>& targets) {
  nlohmann::json out = nlohmann::json::object();
  for (const Target& t : targets) {
    if (!t.limit_key.empty()) out[t.limit_key] = t.limit;
    out[t.met_key] = t.met;
  }
  return out;
}

int write_report(const nlohmann::json& report, const std::string& path) {
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
