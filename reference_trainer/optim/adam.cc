#include "reference_trainer/optim/adam.h"

#include <cmath>
#include <stdexcept>

namespace gw::trainer {
namespace {

void check_lr(double lr) {
  if (!(lr > 0.0)) throw std::invalid_argument("Adam: lr must be > 0, got " + std::to_string(lr));
}

void check_beta(const char* name, double beta) {
  if (!(beta >= 0.0 && beta < 1.0)) {
    throw std::invalid_argument(std::string("Adam: ") + name + " must be in [0, 1), got " +
                                std::to_string(beta));
  }
}

struct Coefficients {
  float beta1, one_minus_beta1, beta2, one_minus_beta2, wd, step_size, bias2_sqrt, eps;
};

// __restrict pointers and no branches, so that g++ vectorises the loop. std::sqrt may set errno, so
// g++ vectorises it only with -fno-math-errno; without that flag the loop stays scalar.
void adam_update(float* __restrict w, const float* __restrict g, float* __restrict m,
                 float* __restrict v, std::size_t n, const Coefficients c, float gs) {
  // gs is ParameterView::grad_scale: see Note [Who divides by the world size].
  for (std::size_t i = 0; i < n; ++i) {
    const float d = g[i] * gs + c.wd * w[i];
    const float mi = c.beta1 * m[i] + c.one_minus_beta1 * d;
    const float vi = c.beta2 * v[i] + c.one_minus_beta2 * (d * d);
    m[i] = mi;
    v[i] = vi;
    w[i] -= c.step_size * (mi / (std::sqrt(vi) / c.bias2_sqrt + c.eps));
  }
}

}  // namespace

Adam::Adam(const Options& options) : StatefulOptimizer("adam", 2), options_(options) {
  check_lr(options.lr);
  check_beta("beta1", options.beta1);
  check_beta("beta2", options.beta2);
  if (!(options.eps > 0.0)) {
    throw std::invalid_argument("Adam: eps must be > 0, got " + std::to_string(options.eps));
  }
  if (!(options.weight_decay >= 0.0)) {
    throw std::invalid_argument("Adam: weight_decay must be >= 0, got " +
                                std::to_string(options.weight_decay));
  }
}

void Adam::set_learning_rate(double lr) {
  check_lr(lr);
  options_.lr = lr;
}

void Adam::step(const std::vector<gw::ParameterView>& params) {
  state_.prepare(params);
  const auto t = static_cast<double>(state_.advance());
  // Scalars in double, as PyTorch computes them, then rounded once to float.
  const double bias1 = 1.0 - std::pow(options_.beta1, t);
  const double bias2 = 1.0 - std::pow(options_.beta2, t);
  const Coefficients c{
      static_cast<float>(options_.beta1),        static_cast<float>(1.0 - options_.beta1),
      static_cast<float>(options_.beta2),        static_cast<float>(1.0 - options_.beta2),
      static_cast<float>(options_.weight_decay), static_cast<float>(options_.lr / bias1),
      static_cast<float>(std::sqrt(bias2)),      static_cast<float>(options_.eps)};
  for (std::size_t i = 0; i < params.size(); ++i) {
    const gw::ParameterView& p = params[i];
    adam_update(p.value, p.grad, state_.buffer(i, 0), state_.buffer(i, 1), p.numel, c,
                p.grad_scale);
  }
}

}  // namespace gw::trainer
