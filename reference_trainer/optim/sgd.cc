#include "reference_trainer/optim/sgd.h"

#include <stdexcept>

#include "kernels/nn.h"

namespace gw::trainer {
namespace {

void check_lr(double lr) {
  if (!(lr > 0.0)) throw std::invalid_argument("Sgd: lr must be > 0, got " + std::to_string(lr));
}

}  // namespace

Sgd::Sgd(const Options& options)
    : StatefulOptimizer("sgd", options.momentum > 0.0 ? 1 : 0, options.stream), options_(options) {
  check_lr(options.lr);
  if (!(options.momentum >= 0.0 && options.momentum < 1.0)) {
    throw std::invalid_argument("Sgd: momentum must be in [0, 1), got " +
                                std::to_string(options.momentum));
  }
  if (!(options.weight_decay >= 0.0)) {
    throw std::invalid_argument("Sgd: weight_decay must be >= 0, got " +
                                std::to_string(options.weight_decay));
  }
  if (options.nesterov && options.momentum == 0.0) {
    throw std::invalid_argument("Sgd: nesterov needs momentum > 0");
  }
}

void Sgd::set_learning_rate(double lr) {
  check_lr(lr);
  options_.lr = lr;
}

void Sgd::step(const std::vector<gw::ParameterView>& params) {
  state_.prepare(params);
  state_.advance();
  kernels::SgdCoefficients c{static_cast<float>(options_.lr),
                             static_cast<float>(options_.weight_decay),
                             static_cast<float>(options_.momentum), 1.0f, options_.nesterov};
  for (std::size_t i = 0; i < params.size(); ++i) {
    const gw::ParameterView& p = params[i];
    // grad_scale: see Note [Who divides by the world size].
    c.grad_scale = p.grad_scale;
    // Plain SGD keeps no buffer (kernels::sgd_update reads a null one as plain).
    float* momentum_buf = options_.momentum == 0.0 ? nullptr : state_.buffer(i, 0);
    kernels::sgd_update(p.value, p.grad, momentum_buf, p.numel, c, options_.stream);
  }
}

std::optional<gw::SgdMomentum> Sgd::sgd_momentum() const {
  return gw::SgdMomentum{options_.momentum, options_.nesterov};
}

void Sgd::release_momentum() {
  if (state_.step() > 0) {
    throw std::logic_error("Sgd::release_momentum: called after " + std::to_string(state_.step()) +
                           " steps; it must come before the first");
  }
  options_.momentum = 0.0;
  options_.nesterov = false;
  momentum_released_ = true;
  state_ = ParameterState("sgd", 0, options_.stream);
}

}  // namespace gw::trainer
