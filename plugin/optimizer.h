// The small interface a training program's existing optimizer implements so that
// DistributedOptimizer can wrap it.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace gw {

// One registered parameter as the inner optimizer sees it at step(): its values (owned by the
// training program) and its gradient over all ranks (a view into DistributedOptimizer's flat
// gradient buffer).
//
// Note [Who divides by the world size]
// The gradient the optimizer must use is grad[i] * grad_scale. An optimizer whose
// accepts_gradient_scale() is false always gets grad_scale == 1: DistributedOptimizer divides the
// summed gradients by the world size in a pass of its own. An optimizer that returns true gets the
// sum and grad_scale == 1/n, and folds the multiplication into the loop it runs anyway, which
// saves a full read and write of the gradients every step.
struct ParameterView {
  std::string name;
  float* value = nullptr;
  const float* grad = nullptr;
  std::size_t numel = 0;
  float grad_scale = 1.0f;
};

// The momentum of an SGD-form optimizer (PyTorch semantics, dampening 0).
struct SgdMomentum {
  double momentum = 0.0;
  bool nesterov = false;
};

// One float array of an optimizer's per-parameter state: a momentum buffer, an Adam moment.
struct StateBuffer {
  float* values = nullptr;
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

  // True when step() applies ParameterView::grad_scale (see Note [Who divides by the world size]).
  virtual bool accepts_gradient_scale() const { return false; }

  // GRADWIRE_COMPRESSOR=dgc applies momentum itself, before sparsification
  // (Note [DGC takes over the momentum] in compressors/dgc_compressor.h). An optimizer of the SGD
  // form w -= lr (d + wd w), d = momentum over the gradient, returns its momentum settings here;
  // others return nullopt, and gradwire then refuses dgc with a configuration error.
  virtual std::optional<SgdMomentum> sgd_momentum() const { return std::nullopt; }
  // After this call (made once, before the first step, only when sgd_momentum() has a value), the
  // optimizer steps without momentum: w -= lr (g * grad_scale + wd w).
  virtual void release_momentum() {
    throw std::logic_error(name() + " has no SGD momentum to release");
  }

  // GRADWIRE_LOCAL_SGD_AVERAGE_STATE=1 averages these arrays over ranks at every averaging point
  // of local SGD (Note [Optimizer state under local SGD] in plugin/local_sgd_averaging.h). An
  // optimizer returns every float array of its state, in the same order on every rank (empty
  // before state exists, e.g. before the first step, or when it keeps none); nullopt means it does
  // not expose its state, and gradwire refuses that setting with a configuration error. Scalars
  // that are the same on every rank (a step count) need not be listed.
  virtual std::optional<std::vector<StateBuffer>> state_buffers() { return std::nullopt; }

  virtual double learning_rate() const = 0;
  virtual void set_learning_rate(double lr) = 0;

  // Optimizer state (step count, momentum, moments) as an opaque byte stream, so a run can be
  // checkpointed and resumed exactly. load_state() throws std::runtime_error on a stream that was
  // not written by save_state() of the same optimizer type and parameter layout.
  virtual void save_state(std::ostream& out) const = 0;
  virtual void load_state(std::istream& in) = 0;
};

}  // namespace gw
