// GRADWIRE_COMPRESSOR=auto: at the first step, measures the link (link_probe.h), the compute
// (the program's first forward and backward) and each candidate's bytes and work (trials.h; under
// GRADWIRE_SYNC=auto local SGD too), combines the ranks' measurements (measured.h), predicts each
// candidate's step time and chooses (Note [The auto cost model], cost_model.h), and has every rank
// take rank 0's choice. Afterwards it checks the prediction against the steps that follow.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fusion/bucket_plan.h"
#include "plugin/auto/accuracy_table.h"
#include "plugin/auto/auto_option.h"
#include "plugin/auto/candidates.h"
#include "plugin/auto/cost_model.h"
#include "plugin/auto/link_probe.h"
#include "plugin/auto/measured.h"
#include "plugin/auto/trials.h"
#include "plugin/comm/counting_communicator.h"
#include "plugin/compressor_factory.h"
#include "plugin/config/config.h"
#include "plugin/logger.h"
#include "plugin/optimizer.h"
#include "plugin/parameter_set.h"
#include "plugin/step_observer.h"
#include "plugin/sync_settings.h"

namespace gw {

// Note [Choosing at the first step]
// auto decides before anything is exchanged, at step 0 once its gradients are ready: the
// compressor it builds then starts from a clean state, as a fixed one would, and no step runs
// under a strategy it did not choose (a dense step of a 10 Mbit/s link would cost more than a
// whole run under dgc). What it measures there:
//  - the link: kLatencyProbes allreduces of 8 bytes (alpha, their median); then, after an idle
//    kRefillSeconds (so that a token bucket that shapes the link, as tc's tbf or a cloud
//    instance's limit does, fills up again after the start-up's broadcast), allreduces from
//    kFirstProbeFloats floats, doubling, until one takes kProbeSeconds, reaches the gradients'
//    size, or the link has settled (the last two at one rate: probes_settled) (beta and the
//    burst, fit_link). Each is timed on every rank and the ranks take the slowest (an 8-byte
//    allreduce after it), so every rank stops at the same size. On a 10 Mbit/s link the probes
//    take about 3 kProbeSeconds; they are control traffic, and the report gives their time and
//    bytes.
//  - the compute: from the optimizer's construction (or load_state) to step 0's gradients, and
//    the backward after the first bucket's release (the overlap).
//  - each candidate, on a copy of step 0's gradients: a trial compressor at its steady state
//    (past its warm-up) encodes every bucket (BucketExchange::trial; trials.h), which gives its bytes and
//    collectives per step and its local work (once untimed, as the first pass pays for
//    allocating and touching its buffers, then the median of kTrialPasses; a candidate that may
//    not be chosen, over the accuracy bound, once, for its report line).
//  - each candidate that may be chosen and whose bytes take at most kTrialExchangeSeconds at the
//    sustained rate: a fresh
//    trial compressor exchanges every bucket of a copy for real (control traffic), once untimed
//    and then kTrialExchanges times, each after a barrier; each bucket's median. This holds what
//    the model cannot price from bytes: the receiving side's checks, merges and decode, and the
//    ranks' waits on one another in each collective. Every rank runs the same ones (the ranks
//    agree on the set first).
// The ranks take the maximum of every input (a synchronous step waits for its slowest rank),
// rank 0 decides and broadcasts the choice (8 bytes), and each rank builds the chosen compressor.
// Step 0's compute includes first-touch costs, so the report also re-measures the inputs over the
// GRADWIRE_AUTO_CHECK_STEPS steps after the decision (medians, the slowest rank's) and compares
// the chosen candidate's prediction from them with the median step it measured (the mean for
// local SGD, whose averaging lengthens one step in K): the model's error. It does
// not decide again: a switch would throw away a compressor's residuals and momentum.

// What auto measured and chose, the same on every rank (the report's "auto" entry).
struct AutoDecision {
  AutoOption chosen = AutoOption::kNone;
  std::int64_t step = 0;
  std::string how;                // "measured", "one rank", "restored from a checkpoint"
  double measure_seconds = 0;     // probes and trials, on this rank
  std::uint64_t probe_bytes = 0;  // control bytes the probes sent from this rank
  std::int64_t probe_collectives = 0;
  std::int64_t trial_exchanges = 0;  // real exchanges of every bucket run (control traffic)
  bool bytes_across_nodes = false;   // b_c and beta count the bytes between nodes
  autotune::Link link;
  std::vector<autotune::ProbePoint> probes;
  autotune::StepInputs inputs;
  double max_accuracy_drop_points = 0;
  std::vector<autotune::Candidate> candidates;
  autotune::Choice choice;
  // The check over the steps after the decision.
  std::int64_t check_steps = 0;  // steps measured so far
  bool checked = false;
  autotune::StepInputs check_inputs;  // medians over those steps
  double predicted_step_s = 0;        // the chosen candidate's prediction from check_inputs
  double measured_step_s = 0;         // the median step (local SGD: the mean), end to end
};

// The step's phases auto times on the host clock: step 0's compute and overlap, and the compute,
// update and overlap of the steps after the decision (Note [Choosing at the first step]).
struct AutoTiming {
  using Clock = std::chrono::steady_clock;
  Clock::time_point started{}, first_release{}, ready{}, last_end{};
  bool released = false;
  bool skip_next = false;  // the step that decided: not one of the checked steps
  std::vector<double> compute, update, overlap, interval;
};

class AutoStrategy final : public StepObserver {
 public:
  // Reads GRADWIRE_AUTO_* and lists the candidates; throws config::ConfigError (before anything
  // is sent) for an unknown name, a bad accuracy file, or when none could be chosen. `comm` and
  // `log` (rank 0's logger; others pass a silent one) serve the check after the decision.
  AutoStrategy(const config::Config& config, const CompressorSettings& settings,
               const SyncSettings& sync, const Optimizer& inner, const ParameterSet& params,
               CountingCommunicator& comm, Logger log);

  bool decided() const { return decision_.has_value(); }
  // It chose local SGD: the optimizer switches to local_sgd_settings() (and no compressor).
  bool chose_local_sgd() const;
  SyncSettings local_sgd_settings() const { return sync_.local_sgd(); }
  const AutoDecision* decision() const { return decision_ ? &*decision_ : nullptr; }

  // Collective, at step 0 with the engine idle: measures, decides, and returns the settings to
  // build the compressor with. `gradients`: the flat gradient buffer (read, not changed).
  CompressorSettings decide(const ParameterSet& params, const fusion::BucketPlan& plan,
                            const float* gradients, std::int64_t step);
  // A checkpoint's choice (load_state); throws std::runtime_error for a name that is not among
  // this run's candidates.
  CompressorSettings restore(const std::string& chosen, std::int64_t step);
  // The choice at the start of the optimizer's state (Note [The auto choice in a checkpoint]).
  // load_choice returns the settings to build the compressor with where it restored a choice
  // (none where the state was saved before step 0 decided, or this run has decided already);
  // throws std::runtime_error on a state without the line, or one that chose otherwise.
  void save_choice(std::ostream& out) const;
  std::optional<CompressorSettings> load_choice(std::istream& in);

  // Test-only: changes this rank's measured inputs before the ranks combine them.
  using Measured = AutoMeasured;
  std::function<void(Measured&)> inject_measurements;

  // StepObserver (Note [Step observers]): the compute and overlap it measures, and the check.
  bool wants_times() const override;
  void restarted() override;
  void bucket_released(std::size_t b, const kernels::Stream& program) override;
  void gradients_ready() override;
  void step_ended(const StepEnd& end) override;

 private:
  // Step 0 on several ranks: the link, then each candidate's codec, then the cheap ones' real
  // exchanges (Note [Choosing at the first step]).
  void measure_exchanges(const ParameterSet& params, const fusion::BucketPlan& plan,
                         const float* gradients, AutoDecision& d, Measured& m);
  void measure_candidates(const ParameterSet& params, TrialBuckets& buckets,
                          const WireEstimate& wire, AutoDecision& d, Measured& m,
                          std::vector<double>& cheap);
  void time_exchanges(const ParameterSet& params, TrialBuckets& buckets, AutoDecision& d,
                      Measured& m, const std::vector<double>& cheap);
  // Candidate i takes dense's figures (its exchange is dense's): dense's index, else none.
  std::optional<std::size_t> same_as_dense(std::size_t i) const;
  std::unique_ptr<compressors::Compressor> trial_compressor(std::size_t i,
                                                            const ParameterSet& params) const;
  void agree_on_choice(AutoDecision& d, const kernels::Stream& stream);
  // The check once its steps are measured (collective).
  void finish_check();
  void log_decision() const;

  CompressorSettings settings_;
  SyncSettings sync_;
  std::optional<SgdMomentum> momentum_;
  CountingCommunicator& comm_;
  Logger log_;
  kernels::Stream stream_;
  CandidateList candidates_;
  double max_drop_ = 0;
  std::int64_t check_steps_ = 0;
  std::optional<AutoDecision> decision_;
  AutoTiming timing_;
};

}  // namespace gw
