// DistributedOptimizer: wraps a training program's optimizer and averages gradients over ranks
// before it runs.
//
//   auto comm = std::make_shared<gw::CountingCommunicator>(gw::make_mpi_world_communicator());
//   gw::DistributedOptimizer opt(comm, std::make_unique<MySgd>(...), {{"w", w.data(), w.size()}});
//   float* grad_w = opt.gradient(0);   // backward writes here
//   ... backward ...; opt.gradient_ready(0);
//   opt.step();                        // average over ranks, then MySgd::step()
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "plugin/comm/counting_communicator.h"
#include "plugin/config/config.h"
#include "plugin/logger.h"
#include "plugin/optimizer.h"

namespace gw {

// A parameter of the training program: its values stay where the program keeps them.
struct ParameterSpec {
  std::string name;
  float* value = nullptr;
  std::size_t numel = 0;
};

struct DistributedOptimizerOptions {
  // Programmatic configuration; the environment's GRADWIRE_* variables override it.
  config::Config config;
  // Test-only: ignore the process environment (tests set everything through `config`).
  bool read_environment = true;
};

class DistributedOptimizer {
 public:
  using Options = DistributedOptimizerOptions;

  // All setup happens here: strict configuration (ConfigError before any communication), the flat
  // gradient buffer, the cross-rank check of configuration and parameter layout, and the broadcast
  // of rank 0's parameters. Collective: every rank constructs it with the same parameters.
  DistributedOptimizer(std::shared_ptr<CountingCommunicator> comm, std::unique_ptr<Optimizer> inner,
                       std::vector<ParameterSpec> params, Options options = Options());

  DistributedOptimizer(const DistributedOptimizer&) = delete;
  DistributedOptimizer& operator=(const DistributedOptimizer&) = delete;

  // The gradient of parameter i: a view into the flat gradient buffer, valid for the lifetime of
  // this object. Backward writes the rank's local gradient here.
  float* gradient(std::size_t i);
  std::vector<float*> gradient_views();
  std::size_t num_parameters() const { return params_.size(); }
  std::size_t gradient_numel() const { return flat_gradients_.size(); }

  // Backward calls this as soon as parameter i's gradient is final. Optional: a program that never
  // calls it has every gradient exchanged at step(). Calling it twice for one parameter in one
  // step, or calling it for some parameters but not all before step(), is a std::logic_error.
  void gradient_ready(std::size_t i);

  // Averages (or sums, GRADWIRE_GRADIENT_REDUCTION) the gradients over ranks, then runs the inner
  // optimizer on every parameter. With an inner optimizer that accepts a gradient scale, the
  // division by the world size is folded into its step (Note [Who divides by the world size]).
  // Collective.
  void step();

  // The exchange alone, for programs that want to look at the reduced gradients before stepping:
  // afterwards gradient(i) holds the average (or the sum). Collective.
  void synchronize_gradients();

  // Copies rank 0's parameter values to every rank (traffic kind parameter). Collective.
  void broadcast_parameters();

  const config::Config& config() const { return config_; }
  Optimizer& inner() { return *inner_; }
  CountingCommunicator& communicator() { return *comm_; }
  std::int64_t steps() const { return steps_; }
  const Logger& logger() const { return log_; }

 private:
  struct Registered {
    ParameterSpec spec;
    std::size_t offset = 0;  // into flat_gradients_
  };

  std::string layout_canonical() const;
  // Sums the gradients over ranks (the collective) and clears the ready marks.
  void exchange_gradients();

  std::shared_ptr<CountingCommunicator> comm_;
  std::unique_ptr<Optimizer> inner_;
  config::Config config_;
  Logger log_;
  bool average_ = true;
  std::vector<Registered> params_;
  std::vector<float> flat_gradients_;
  std::vector<ParameterView> views_;
  std::vector<char> ready_;
  std::size_t ready_count_ = 0;
  std::int64_t steps_ = 0;
};

}  // namespace gw
