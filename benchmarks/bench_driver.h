// The benchmarks' driver, the part without MPI: a table of variants timed in rotation, medians,
// verdicts against targets and the JSON report. gradwire_bench_compress uses it directly; the MPI
// benchmarks through bench_mpi_driver.h, which times each call on every rank.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gw::bench {

// One of the paths a benchmark compares: its name (a column, a report key) and one call of it.
struct Variant {
  std::string name;
  std::function<void()> run;
};
using Variants = std::vector<Variant>;

// Note [Rotation]
// Every benchmark measures the variants it compares side by side in one run, so that drift on a
// shared machine hits all alike: each iteration runs every variant once, and the one that goes
// first moves on by one each iteration, so that none always follows the same one. The medians of
// the per-iteration times are compared as ratios.

// Times of the variants in rotation (Note [Rotation]): times[v][it] = time_one(variants[v].run) in
// iteration `it`; `after(it)`, untimed, ends each iteration (may be empty).
std::vector<std::vector<double>> rotate(
    const Variants& variants, int iterations,
    const std::function<double(const std::function<void()>&)>& time_one,
    const std::function<void(int)>& after);

double median(std::vector<double> v);
// The median of each variant's times, in the variants' order (of rotate's result).
std::vector<double> medians(const std::vector<std::vector<double>>& times);

// The one-process benchmarks' table: "path median(ms) GB/s", a row per variant with its median
// and `bytes` read in that time.
void print_path_table(const Variants& variants, const std::vector<double>& median_seconds,
                      double bytes);

// The report's {name: seconds} of each variant.
nlohmann::json seconds_by_name(const Variants& variants, const std::vector<double>& seconds);

// printf into a string.
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// A figure a benchmark's verdict is on: printed as "# <measured> (target: <target>) met|NOT met",
// reported under "targets" as <limit_key>: limit (unless the key is empty) and <met_key>: met.
struct Target {
  std::string measured;  // "<what>: <the figure as shown>"
  std::string target;
  bool met = false;
  std::string limit_key;
  double limit = 0;
  std::string met_key;
};
// `value` at most (at least) `limit`, the target printed "at most <limit><qualifier>".
Target at_most(std::string measured, double value, double limit, std::string limit_key,
               std::string met_key, const std::string& qualifier = "");
Target at_least(std::string measured, double value, double limit, std::string limit_key,
                std::string met_key);
// "wrong elements: <wrong> (target: 0)", reported as wrong_met.
Target no_wrong_elements(std::int64_t wrong);

void print_verdicts(const std::vector<Target>& targets);
nlohmann::json targets_json(const std::vector<Target>& targets);

// Writes `report` to `path`; returns the process exit code (2 when it cannot be written).
int write_report(const nlohmann::json& report, const std::string& path);

}  // namespace gw::bench
