// Stochastic gradient descent with optional momentum, Nesterov momentum and L2 weight decay.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "kernels/stream.h"
#include "plugin/optimizer.h"
#include "reference_trainer/optim/parameter_state.h"

namespace gw::trainer {

// PyTorch semantics (dampening 0): g' = g + weight_decay * w; with momentum,
// buf = momentum * buf + g' (buf starts at zero, so the first step gives buf = g');
// d = nesterov ? g' + momentum * buf : buf (d = g' without momentum); w -= lr * d.
class Sgd final : public StatefulOptimizer {
 public:
  struct Options {
    double lr = 0.0;  // must be set: > 0
    double momentum = 0.0;
    bool nesterov = false;
    double weight_decay = 0.0;
    // Where the parameters, gradients and this optimizer's state live (the host, or the CUDA
    // stream of gradwire_train's GPU mode).
    kernels::Stream stream = kernels::Stream::host();
  };

  // Throws std::invalid_argument naming the option on lr <= 0, momentum outside [0, 1),
  // weight_decay < 0, or nesterov without momentum.
  explicit Sgd(const Options& options);

  std::string name() const override { return "sgd"; }
  // State (the momentum buffers) is created at the first step for the layout it is given; a later
  // step with another layout throws std::invalid_argument.
  void step(const std::vector<gw::ParameterView>& params) override;
  std::optional<gw::SgdMomentum> sgd_momentum() const override;
  // Throws std::logic_error after the first step. Afterwards options().momentum is 0.
  void release_momentum() override;
  bool momentum_released() const { return momentum_released_; }
  double learning_rate() const override { return options_.lr; }
  void set_learning_rate(double lr) override;

  const Options& options() const { return options_; }

 private:
  Options options_;
  bool momentum_released_ = false;
};

}  // namespace gw::trainer
