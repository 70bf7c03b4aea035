// Adam with bias correction and L2 weight decay added to the gradient (PyTorch's Adam, not AdamW).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "kernels/stream.h"
#include "plugin/optimizer.h"
#include "reference_trainer/optim/parameter_state.h"

namespace gw::trainer {

// At step t (from 1): g' = g + weight_decay * w; m = beta1 m + (1 - beta1) g';
// v = beta2 v + (1 - beta2) g'^2; w -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) +
// eps).
class Adam final : public StatefulOptimizer {
 public:
  struct Options {
    double lr = 0.0;  // must be set: > 0
    double beta1 = 0.9;
    double beta2 = 0.999;
    double eps = 1e-8;
    double weight_decay = 0.0;
    // Where the parameters, gradients and this optimizer's state live (the host, or the CUDA
    // stream of gradwire_train's GPU mode).
    kernels::Stream stream = kernels::Stream::host();
  };

  // Throws std::invalid_argument naming the option on lr <= 0, a beta outside [0, 1), eps <= 0 or
  // weight_decay < 0.
  explicit Adam(const Options& options);

  std::string name() const override { return "adam"; }
  // State (step count, first and second moments) is created at the first step for the layout it
  // is given; a later step with another layout throws std::invalid_argument.
  void step(const std::vector<gw::ParameterView>& params) override;
  double learning_rate() const override { return options_.lr; }
  void set_learning_rate(double lr) override;

  const Options& options() const { return options_; }

 private:
  Options options_;
};

}  // namespace gw::trainer
