#include "reference_trainer/optim/sgd.h"

#include <stdexcept>

namespace gw::trainer {
namespace {

void check_lr(double lr) {
  if (!(lr > 0.0)) throw std::invalid_argument("Sgd: lr must be > 0, got " + std::to_string(lr));
}

// The update loops take __restrict pointers and no branches so that g++ vectorises them.
// gs is ParameterView::grad_scale: see Note [Who divides by the world size].
void plain_update(float* __restrict w, const float* __restrict g, std::size_t n, float lr, float wd,
                  float gs) {
  for (std::size_t i = 0; i < n; ++i) w[i] -= lr * (g[i] * gs + wd * w[i]);
}

void momentum_update(float* __restrict w, const float* __restrict g, float* __restrict buf,
                     std::size_t n, float lr, float wd, float momentum, float gs) {
  for (std::size_t i = 0; i < n; ++i) {
    const float b = momentum * buf[i] + (g[i] * gs + wd * w[i]);
    buf[i] = b;
    w[i] -= lr * b;
  }
}

void nesterov_update(float* __restrict w, const float* __restrict g, float* __restrict buf,
                     std::size_t n, float lr, float wd, float momentum, float gs) {
  for (std::size_t i = 0; i < n; ++i) {
    const float d = g[i] * gs + wd * w[i];
    const float b = momentum * buf[i] + d;
    buf[i] = b;
    w[i] -= lr * (d + momentum * b);
  }
}

}  // namespace

Sgd::Sgd(const Options& options)
    : StatefulOptimizer("sgd", options.momentum > 0.0 ? 1 : 0), options_(options) {
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
  const auto lr = static_cast<float>(options_.lr);
  const auto wd = static_cast<float>(options_.weight_decay);
  const auto momentum = static_cast<float>(options_.momentum);
  for (std::size_t i = 0; i < params.size(); ++i) {
    const gw::ParameterView& p = params[i];
    if (options_.momentum == 0.0) {
      plain_update(p.value, p.grad, p.numel, lr, wd, p.grad_scale);
    } else if (options_.nesterov) {
      nesterov_update(p.value, p.grad, state_.buffer(i, 0), p.numel, lr, wd, momentum,
                      p.grad_scale);
    } else {
      momentum_update(p.value, p.grad, state_.buffer(i, 0), p.numel, lr, wd, momentum,
                      p.grad_scale);
    }
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
  state_ = ParameterState("sgd", 0);
}

}  // namespace gw::trainer
