// gradwire_compare_params A B --max-rel-diff X: compares two parameter files written by
// gradwire_train --save-params. The relative difference is max|a - b| / max|b| (normwise, so that
// parameters near zero do not dominate); exits 0 when it is at most X.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>

#include "cli/cli.h"
#include "reference_trainer/app/parameter_file.h"

int main(int argc, char** argv) {
  std::string a_path, b_path;
  double max_rel = 1e-5;
  gw::cli::Parser app{"Compare two gradwire parameter files"};
  app.add("a", a_path).required();
  app.add("b", b_path).required();
  app.add("--max-rel-diff", max_rel).show_default();
  if (const auto code = app.parse(argc, argv)) return *code;
  try {
    const auto a = gw::trainer::load_parameters(a_path);
    const auto b = gw::trainer::load_parameters(b_path);
    if (a.size() != b.size()) {
      std::fprintf(stderr, "different sizes: %zu vs %zu\n", a.size(), b.size());
      return 1;
    }
    double max_diff = 0, max_b = 0, max_elem_rel = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
      if (!std::isfinite(d)) {
        std::fprintf(stderr, "non-finite value at %zu\n", i);
        return 1;
      }
      max_diff = std::max(max_diff, d);
      max_b = std::max(max_b, std::fabs(static_cast<double>(b[i])));
      max_elem_rel = std::max(max_elem_rel, d / std::max(std::fabs(double(b[i])), 1e-3));
    }
    const double rel = max_b > 0 ? max_diff / max_b : max_diff;
    std::printf(
        "%zu parameters: max |a-b| = %.3e, max |b| = %.3e, relative difference %.3e "
        "(limit %.1e); largest per-element |a-b|/max(|b|,1e-3) = %.3e\n",
        a.size(), max_diff, max_b, rel, max_rel, max_elem_rel);
    return rel <= max_rel ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
