#include "reference_trainer/optim/adam.h"

#include <cmath>
#include <stdexcept>

#include "kernels/nn.h"

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

}  // namespace

Adam::Adam(const Options& options)
    : StatefulOptimizer("adam", 2, options.stream), options_(options) {
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
  kernels::AdamCoefficients c{static_cast<float>(options_.beta1),
                              static_cast<float>(1.0 - options_.beta1),
                              static_cast<float>(options_.beta2),
                              static_cast<float>(1.0 - options_.beta2),
                              static_cast<float>(options_.weight_decay),
                              static_cast<float>(options_.lr / bias1),
                              static_cast<float>(std::sqrt(bias2)),
                              static_cast<float>(options_.eps),
                              1.0f};
  for (std::size_t i = 0; i < params.size(); ++i) {
    const gw::ParameterView& p = params[i];
    // grad_scale: see Note [Who divides by the world size].
    c.grad_scale = p.grad_scale;
    kernels::adam_update(p.value, p.grad, state_.buffer(i, 0), state_.buffer(i, 1), p.numel, c,
                         options_.stream);
  }
}

}  // namespace gw::trainer
