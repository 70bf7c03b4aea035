// The small interface a training program's existing optimizer implements so that
// DistributedOptimizer can wrap it.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

namespace gw {

// One registered parameter as the inner optimizer sees it at step(): its values (owned by the
// training program) and its gradient, already averaged over ranks by the time step() is called
// (a view into DistributedOptimizer's flat gradient buffer).
struct ParameterView {
  std::string name;
  float* value = nullptr;
  const float* grad = nullptr;
  std::size_t numel = 0;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;

  // A short name for reports ("sgd", "adam").
  virtual std::string name() const = 0;

  // Updates every parameter from its gradient. `params` holds the same parameters in the same
  // order on every call; an implementation may keep per-parameter state indexed by position.
  virtual void step(const std::vector<ParameterView>& params) = 0;

  virtual double learning_rate() const = 0;
  virtual void set_learning_rate(double lr) = 0;

  // Optimizer state (step count, momentum, moments) as an opaque byte stream, so a run can be
  // checkpointed and resumed exactly. load_state() throws std::runtime_error on a stream that was
  // not written by save_state() of the same optimizer type and parameter layout.
  virtual void save_state(std::ostream& out) const = 0;
  virtual void load_state(std::istream& in) = 0;
};

}  // namespace gw
