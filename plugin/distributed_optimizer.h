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

#include "compressors/compressor.h"
#include "plugin/bucket_exchange.h"
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
  // Test-only: false keeps topk/dgc's sparse exchange even where a dense one would move fewer
  // bytes (see Note [When sparse falls back to dense]), so tests can run it at sparsity 0.
  bool sparse_dense_fallback = true;
};

// What the compressor did over the run so far, on this rank.
struct CompressionStats {
  std::string compressor;
  std::int64_t warmup_end_step = 0;  // first step at the final sparsity (0: no warm-up)
  // Steps exchanged from warmup_end_step on (from the resume point, after load_state).
  std::int64_t steps_after_warmup = 0;
  // Gradient bytes this rank sent over those steps (communicator counters).
  std::uint64_t gradient_bytes_after_warmup = 0;
  // What one step of GRADWIRE_COMPRESSOR=none would send from this rank: the fp32 allreduce of
  // every gradient.
  std::uint64_t dense_bytes_per_step = 0;
  std::int64_t sparse_exchanges = 0;  // bucket exchanges that went sparse
  std::int64_t dense_fallbacks = 0;   // planned sparse, sent dense (Note [When sparse falls...])
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
  // afterwards gradient(i) holds the average (or the sum), and the next step() uses them without
  // exchanging again. Collective.
  void synchronize_gradients();

  // Copies rank 0's parameter values to every rank (traffic kind parameter). Collective.
  void broadcast_parameters();

  // The whole state a resumed run needs beside the parameters: the step count, the compressor's
  // state (residuals, DGC momentum) and the inner optimizer's. load_state throws
  // std::runtime_error on a stream from another configuration or layout.
  void save_state(std::ostream& out) const;
  void load_state(std::istream& in);

  const config::Config& config() const { return config_; }
  const CompressionStats& compression_stats() const { return stats_; }
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
  // Runs the compressor and the collectives over every bucket and clears the ready marks.
  // Afterwards each parameter's gradient is the sum over ranks times multiplier_[i].
  void exchange_gradients();
  // What the inner optimizer must multiply parameter i's gradient by.
  float needed_scale(std::size_t i) const;

  std::shared_ptr<CountingCommunicator> comm_;
  std::unique_ptr<Optimizer> inner_;
  config::Config config_;
  Logger log_;
  bool average_ = true;
  std::vector<Registered> params_;
  std::vector<float> flat_gradients_;
  std::unique_ptr<compressors::Compressor> compressor_;
  BucketExchange exchange_;
  compressors::BucketView bucket_;  // the whole flat buffer, until fusion splits it
  std::vector<float> multiplier_;   // per parameter: 1 (sum) or 1/n (average)
  bool synchronized_ = false;       // synchronize_gradients() ran since the last step()
  CompressionStats stats_;
  std::int64_t measure_from_step_ = 0;  // per-step figures count from here
  std::uint64_t bytes_at_warmup_end_ = 0;
  std::vector<ParameterView> views_;
  std::vector<char> ready_;
  std::size_t ready_count_ = 0;
  std::int64_t steps_ = 0;
};

}  // namespace gw
