// Helpers shared by the trainer_nn tests: random fills, owned parameter storage for a standalone
// layer, and central finite differences.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "reference_trainer/nn/layer.h"
#include "reference_trainer/nn/parameter_init.h"
#include "reference_trainer/nn/tensor.h"

namespace gw::trainer::testing {

// Uniform in [lo, hi), deterministic.
inline void fill_uniform(float* x, std::size_t n, std::mt19937_64& rng, float lo, float hi) {
  for (std::size_t i = 0; i < n; ++i) x[i] = lo + (hi - lo) * uniform_float(rng);
}

inline Tensor random_tensor(const Shape& shape, std::mt19937_64& rng, float lo = -1.0f,
                            float hi = 1.0f) {
  Tensor t(shape);
  fill_uniform(t.data(), t.numel(), rng, lo, hi);
  return t;
}

// Value and gradient storage for a layer used outside a Model; values random in [-1, 1).
struct OwnedParameters {
  OwnedParameters(Layer& layer, std::mt19937_64& rng) {
    for (std::size_t i = 0; i < layer.parameters().size(); ++i) {
      const std::size_t n = layer.parameters()[i].numel;
      values.emplace_back(n);
      grads.emplace_back(n, 0.0f);
      fill_uniform(values.back().data(), n, rng, -1.0f, 1.0f);
      layer.bind_value(i, values.back().data());
      layer.bind_gradient(i, grads.back().data());
    }
  }
  std::vector<std::vector<float>> values;
  std::vector<std::vector<float>> grads;
};

// Central differences that also flag the elements whose perturbation crosses a kink (a ReLU at 0,
// a max-pool near-tie): there the forward and backward one-sided differences disagree by more
// than smooth curvature and rounding explain, and neither analytic nor numeric value is
// meaningful. A wrong analytic gradient does not make one-sided differences disagree, so skipping
// these cannot hide one.
struct KinkAwareGradient {
  std::vector<double> central;
  std::vector<bool> kink;
  std::size_t kinks = 0;
};

inline KinkAwareGradient kink_aware_gradient(float* x, std::size_t n, float eps,
                                             const std::function<double()>& f, double rtol,
                                             double atol) {
  KinkAwareGradient g{std::vector<double>(n), std::vector<bool>(n, false), 0};
  const double f0 = f();
  for (std::size_t i = 0; i < n; ++i) {
    const float saved = x[i];
    x[i] = saved + eps;
    const double plus = f();
    x[i] = saved - eps;
    const double minus = f();
    x[i] = saved;
    const double forward = (plus - f0) / eps;
    const double backward = (f0 - minus) / eps;
    g.central[i] = (plus - minus) / (2.0 * static_cast<double>(eps));
    if (std::abs(forward - backward) >
        rtol * std::max(std::abs(forward), std::abs(backward)) + atol) {
      g.kink[i] = true;
      ++g.kinks;
    }
  }
  return g;
}

// Central differences (f(x + eps) - f(x - eps)) / 2 eps for each of x[0..n), restoring x.
inline std::vector<double> numeric_gradient(float* x, std::size_t n, float eps,
                                            const std::function<double()>& f) {
  return kink_aware_gradient(x, n, eps, f, 0.0, 0.0).central;
}

// The largest |a - n| / (rtol * max(|a|, |n|) + atol) over the elements: above 1 means mismatch.
struct GradientComparison {
  double worst = 0.0;
  std::size_t index = 0;
  double analytic = 0.0;
  double numeric = 0.0;
  bool ok() const { return worst <= 1.0; }
  std::string to_string() const {
    return "worst at " + std::to_string(index) + ": analytic " + std::to_string(analytic) +
           " vs numeric " + std::to_string(numeric) + " (ratio to tolerance " +
           std::to_string(worst) + ")";
  }
};

// Elements flagged in skip (when given) are left out.
inline GradientComparison compare_gradients(const float* analytic,
                                            const std::vector<double>& numeric, double rtol,
                                            double atol, const std::vector<bool>* skip = nullptr) {
  GradientComparison c;
  for (std::size_t i = 0; i < numeric.size(); ++i) {
    if (skip != nullptr && (*skip)[i]) continue;
    const double a = analytic[i];
    const double n = numeric[i];
    const double r = std::abs(a - n) / (rtol * std::max(std::abs(a), std::abs(n)) + atol);
    if (std::isnan(r)) return GradientComparison{r, i, a, n};
    if (r > c.worst) c = GradientComparison{r, i, a, n};
  }
  return c;
}

}  // namespace gw::trainer::testing
