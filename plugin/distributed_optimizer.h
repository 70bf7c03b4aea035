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
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "amp/loss_scaler.h"
#include "compressors/compressor.h"
#include "fusion/bucket_plan.h"
#include "fusion/launch_tracker.h"
#include "kernels/stream.h"
#include "plugin/amp_step.h"
#include "plugin/auto/auto_strategy.h"
#include "plugin/comm/counting_communicator.h"
#include "plugin/compression_counter.h"
#include "plugin/config/config.h"
#include "plugin/engine.h"
#include "plugin/gradient_accumulation.h"
#include "plugin/local_sgd_averaging.h"
#include "plugin/logger.h"
#include "plugin/optimizer.h"
#include "plugin/parameter_set.h"
#include "plugin/step_buckets.h"
#include "plugin/step_observer.h"
#include "plugin/step_timeline.h"
#include "sync_policies/sync_policy.h"

namespace gw {

struct DistributedOptimizerOptions {
  // Programmatic configuration; the environment's GRADWIRE_* variables override it.
  config::Config config;
  // Where the parameters and gradients live and backward runs (Note [The step on a device]): the
  // host (the default), or the program's CUDA stream, whose device then holds the parameters,
  // the flat gradient buffer, the compressor's state and every buffer the step uses.
  kernels::Stream stream = kernels::Stream::host();
  // Test-only: ignore the process environment (tests set everything through `config`).
  bool read_environment = true;
  // Test-only: false keeps topk/dgc's sparse exchange even where a dense one would move fewer
  // bytes (see Note [When sparse falls back to dense]), so tests can run it at sparsity 0.
  bool sparse_dense_fallback = true;
  // Test-only: the engine's job for `bucket` throws at `step` on `rank` (-1: every rank), as a
  // failing collective would (Note [Engine threads]).
  struct InjectedFailure {
    std::int64_t step = -1;  // -1: never
    std::size_t bucket = 0;
    int rank = -1;
  } inject_engine_failure;
  // Test-only: GRADWIRE_COMPRESSOR=auto's measured inputs on this rank, changed before the ranks
  // combine them (AutoStrategy::inject_measurements).
  std::function<void(AutoStrategy::Measured&)> inject_auto_measurements;
};

// Note [Buckets in the step]
// The flat gradient buffer is cut into buckets (Note [Bucket plan], GRADWIRE_FUSION_THRESHOLD_MB).
// gradient_ready(i) marks parameter i's gradient final; a bucket whose gradients are all final is
// released in plan order (Note [Launch order]) to the engine (Note [Engine threads]), which runs
// the bucket's job on its own thread while backward goes on: the whole per-bucket pipeline, the
// compressor's encode (error feedback, momentum correction, the sparse or dense plan), the
// collectives, the decode and, on the dense wire, the AMP unscale-and-check of the reduced
// values. step() releases whatever is left (everything, for a program that never calls
// gradient_ready), waits for every bucket, and runs the inner optimizer. What needs the whole
// step's view stays on the calling thread with the engine idle: the one 4-byte vote on an
// overflow when AMP checks before the exchange (topk, dgc, local steps), after which the buckets
// are exchanged by the engine in a second pass, and the sync policy's schedule. Local SGD's
// parameter averaging also runs bucket by bucket through the engine, after the update.
// An exception in a bucket's job reaches the caller of step() (or synchronize_gradients()) with
// the rank, the step and the bucket named; the optimizer is unusable afterwards.

// Note [The step on a device]
// With a CUDA stream in the options (the stream backward runs on), everything the step touches
// lives on that stream's device: the flat gradient buffer (gradient(i) is device memory), the
// compressor's state, the exchange's payloads, local SGD's buffers and anchor. The optimizer makes
// its own communication stream on that device. When a bucket is released, gradient_ready records
// an event on the program's stream; the bucket's job makes the communication stream wait on it
// (on the device, the host does not block), so the exchange starts once backward has written the
// bucket and overlaps the rest of backward, as on the host. The job then runs the same code as on
// the host (Note [Compressors on a stream]) on the communication stream; the communicator takes
// the device buffers (NCCL, or MPI staging them through pinned memory). step() waits for the
// buckets as on the host: each job has synchronised the communication stream before it ended, so
// the inner optimizer (the program's, which must work on device memory) sees final gradients.
// The timeline's bucket phases are events on those streams, so they show when the device ran
// each phase (Note [Device phases on the host clock]).

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
  std::size_t gradient_numel() const { return params_.numel(); }
  // The stream of the options: where the parameters and gradients live.
  const kernels::Stream& stream() const { return params_.stream(); }
  // The buckets (Note [Bucket plan]) and, for the last step that exchanged or checked gradients,
  // the order the engine ran their jobs in (tests check it is the plan order on every rank).
  const fusion::BucketPlan& bucket_plan() const { return buckets_.plan; }
  const std::vector<std::size_t>& last_run_order() const { return buckets_.run_order; }
  // Milliseconds from the start of the last step's first bucket exchange to the end of its last,
  // on the communication stream: CUDA events on a device, the host clock on the host. The span
  // overlaps backward where the buckets went out during it. 0 after a step that exchanged no
  // gradients (a local step).
  double last_exchange_ms() const { return buckets_.span.last_ms; }
  // This rank's timeline file (GRADWIRE_TIMELINE), or "" when off.
  std::string timeline_path() const { return timeline_.path(); }

  // Backward calls this as soon as parameter i's gradient is final; a bucket whose gradients are
  // all final is exchanged on the engine thread right away (Note [Buckets in the step]), so the
  // gradient must not be written again before step(). Under gradient accumulation, a backward
  // pass before the last adds the gradient to the step's sum instead
  // (Note [Gradient accumulation]). Optional: a program that never calls it
  // has every gradient exchanged at step(). Calling it twice for one parameter in one step, or
  // calling it for some parameters but not all before step(), is a std::logic_error. Call it from
  // one thread at a time.
  void gradient_ready(std::size_t i);

  // Averages (or sums, GRADWIRE_GRADIENT_REDUCTION) the gradients over ranks, then runs the inner
  // optimizer on every parameter. With an inner optimizer that accepts a gradient scale, the
  // division by the world size is folded into its step (Note [Who divides by the world size]).
  // Under a local SGD policy (GRADWIRE_SYNC) a local step runs the inner optimizer on this rank's
  // own gradients, and an averaging point averages the parameters after the update. Collective.
  // Under GRADWIRE_ACCUMULATION_STEPS=N, call it after every backward pass: the first N-1 only
  // add to the gradient sum (not collective); the Nth does all of the above.
  void step();

  // The exchange alone, for programs that want to look at the reduced gradients before stepping:
  // afterwards gradient(i) holds what step() will use, the average (or the sum) over ranks, or on
  // a local step this rank's own gradient; the next step() uses them without exchanging again.
  // Collective.
  void synchronize_gradients();

  // This rank's training loss for the current step, before step(). adaptive_local_sgd needs it at
  // every step from GRADWIRE_LOCAL_SGD_BEGIN_STEP on (step() throws std::logic_error otherwise);
  // the other policies ignore it. Twice in one step is a std::logic_error.
  void report_loss(double loss);

  // Makes every rank's parameters (and, with GRADWIRE_LOCAL_SGD_AVERAGE_STATE=1, optimizer state)
  // the average over ranks now, if a local step ran since the last averaging; otherwise (and
  // always under every_step) it does nothing. For evaluating or saving the model mid-period. The
  // policy's schedule is unchanged. Collective.
  void synchronize_parameters();

  // Copies rank 0's parameter values to every rank (traffic kind parameter). Collective.
  void broadcast_parameters();

  // Mixed precision (Note [Mixed precision in the step]): what the program multiplies its loss by
  // before backward; 1 when GRADWIRE_AMP=0.
  float loss_scale() const { return amp_.loss_scale(); }
  // The settings read at construction (ops: the policy the program's ops consult).
  const AmpSettings& amp_settings() const { return amp_.settings(); }
  // The loss scaler (scale history, skipped steps); null when GRADWIRE_AMP=0.
  const amp::LossScaler* loss_scaler() const { return amp_.scaler(); }
  // What the gradients travel as: "fp32", "fp16" or "sparse" (topk/dgc messages).
  std::string gradient_wire() const;

  // The whole state a resumed run needs beside the parameters: the step count, the compressor's
  // state (residuals, DGC momentum), the inner optimizer's, the sync policy's (schedule, adaptive
  // reference, the loss since the last averaging point, the fp16 anchor) and the loss scaler's
  // (Note [Optimizer state stream]). load_state throws std::runtime_error on a stream from
  // another configuration or layout, leaving everything as it was.
  void save_state(std::ostream& out) const;
  void load_state(std::istream& in);

  const config::Config& config() const { return config_; }
  const CompressionStats& compression_stats() const { return compression_.stats(); }
  // GRADWIRE_COMPRESSOR=auto's measurements and choice, once made; null before, and for every
  // other compressor. See Note [Choosing at the first step].
  const AutoDecision* auto_decision() const { return auto_ ? auto_->decision() : nullptr; }
  const SyncStats& sync_stats() const { return local_sgd_->stats(); }
  // Whether every rank holds the same parameters now: under every_step always; under a local
  // policy (diloco included) when no local step ran since the last averaging point.
  bool parameters_in_step() const { return local_sgd_->local_steps_since_average() == 0; }
  // Streaming diloco with a delay: a fragment's exchange is in flight between steps, and every
  // collective of the program's waits for it (Note [Streaming DiLoCo]). The same on every rank.
  bool exchange_in_flight() const { return local_sgd_->in_flight(); }
  // Streaming diloco, between steps: puts the global model (every fragment's last outer step, the
  // same on every rank) into the parameters, keeping the rank's own, and returns true, for an
  // evaluation without communication; restore_own_parameters() puts the rank's own back. Returns
  // false, changing nothing, under the other policies and before the first step.
  bool use_global_parameters();
  void restore_own_parameters();
  const sync_policies::SyncPolicy& sync_policy() const { return local_sgd_->policy(); }
  Optimizer& inner() { return *inner_; }
  CountingCommunicator& communicator() { return *comm_; }
  // Optimizer steps taken (under gradient accumulation, not backward passes).
  std::int64_t steps() const { return steps_; }
  // GRADWIRE_ACCUMULATION_STEPS: backward passes per optimizer step, and the one running (0-based;
  // the last exchanges and updates).
  int accumulation_steps() const { return accumulation_.passes(); }
  int backward_pass() const { return accumulation_.pass(); }
  const Logger& logger() const { return log_; }

 private:
  // What a launched bucket's job does this step.
  enum class Job { kNone, kExchange, kCheck, kAverageParameters };
  // What the current step has done so far: reset when a step ends (and by load_state), so no
  // flag outlives its step.
  struct StepFacts {
    bool loss_reported = false;  // report_loss() ran
    bool synchronized = false;   // synchronize_gradients() ran: step() exchanges nothing more
    // Set when the step's gradients start (the first gradient_ready, or step() without any).
    struct Gradients {
      Job job = Job::kNone;
      bool exchanging = false;    // the policy exchanges this step's gradients
      bool job_overflow = false;  // an AMP check in a bucket job found inf or NaN (this rank)
      bool overflow = false;      // the gradients overflowed on some rank: skip the update
      bool exchanged = false;     // the exchange ran
      std::size_t dense_tensors = 0, sparse_tensors = 0;  // for the debug log
      bool dense_fallback = false;
      bool auto_pending = false;  // auto decides in collect_gradients, before the exchange
    } gradients;
  };

  // The first gradient_ready of a step (or step() without any): what this step's bucket jobs do.
  void begin_gradients();
  // Under gradient accumulation: parameter i's gradient of this backward pass into the sum, or
  // the sum into it in the last pass.
  void fold_pass(std::size_t i);
  // A backward pass before the last ends at step() (Note [Gradient accumulation]).
  void end_pass();
  // The names of the parameters gradient_ready has not marked this pass, or "".
  std::string unmarked_parameters() const;
  // Releases what gradient_ready did not, waits for every bucket and, when AMP checks before the
  // exchange, votes on an overflow and exchanges. Afterwards each parameter's gradient times
  // scale_.needed(i) is what the inner optimizer must use (on a local step: this rank's own
  // gradient, scale 1).
  void collect_gradients();
  // The second pass of collect_gradients, once the step's exchange may start (after AMP's vote,
  // or auto's choice): every bucket's exchange on the engine.
  void exchange_all_buckets();
  // Hands the `count` buckets the launch tracker just released to the engine; throws the engine's
  // failure (wait_engine) if a job has failed.
  void launch_released(std::size_t count);
  // Hands every bucket to the engine, in plan order, stopping at a failed engine; a wait_engine()
  // must follow.
  void launch_all();
  // The engine's job for bucket b (Note [Buckets in the step]), on the engine thread.
  void run_job(std::size_t b);
  // Compressor and collectives over bucket b. Afterwards each of its parameters' gradient is the
  // sum over ranks times its multiplier in scale_.
  void exchange_bucket(std::size_t b);
  // The AMP unscale-and-check of bucket b.
  void check_bucket(std::size_t b);
  // Streaming diloco's exchanges on an engine of their own (Note [Streaming DiLoCo]); a failure
  // there becomes an exception naming rank and fragment.
  void start_fragment_engine();
  void wait_fragments();
  // Waits for the engine; an engine failure becomes an exception naming rank, step and bucket.
  void wait_engine();
  void throw_if_failed() const;
  // For the calls that use the communicator on the calling thread: not while buckets are in
  // flight (std::logic_error), nor after an engine failure.
  void check_between_steps(const char* what) const;
  // AMP's decision, local SGD's anchor and the inner optimizer's update (unless AMP skips it),
  // timed where an observer wants it; `local`: a local step.
  void update(bool local, StepEnd& end);
  // Local SGD: averages the parameters over ranks on the engine, then the state and the schedule
  // (LocalSgdAveraging); `scheduled`: an averaging point of the policy.
  void average_parameters(bool scheduled);
  void log_exchange(StepClock::time_point wait_begin) const;
  void log_startup(double threshold_mib) const;
  // Makes the compressor of `settings` the step's (at construction, and where auto decides).
  void install_compressor(const CompressorSettings& settings);
  // auto at step 0 (Note [Choosing at the first step]): measure, decide, build the compressor.
  void decide_auto();
  // auto chose local SGD: the sync policy becomes local_sgd at GRADWIRE_LOCAL_SGD_K.
  void switch_to_local_sgd();

  std::shared_ptr<CountingCommunicator> comm_;
  std::unique_ptr<Optimizer> inner_;
  config::Config config_;
  Logger log_;
  ParameterSet params_;
  std::unique_ptr<compressors::Compressor> compressor_;
  // GRADWIRE_COMPRESSOR=auto; null otherwise.
  std::unique_ptr<AutoStrategy> auto_;
  // The bucket jobs' stream (Note [The step on a device]): the host, or a CUDA stream of the
  // optimizer's own on the program's device.
  kernels::Stream comm_stream_ = kernels::Stream::host();
  // Tensor fusion (Note [Buckets in the step]): one view and one exchange (its reusable buffers)
  // per bucket of the flat gradient buffer.
  StepBuckets buckets_;
  GradientScale scale_;
  GradientAccumulation accumulation_;
  StepFacts facts_;
  // Set once the engine failed (the optimizer is unusable), and the test's injected failure.
  struct Failure {
    std::string message;
    Options::InjectedFailure inject;
  } failure_;
  CompressionCounter compression_;
  // The collaborators: local SGD (Note [Parameter averaging wire]), mixed precision
  // (Note [Mixed precision in the step]), the timeline (Note [Timeline format]), and what watches
  // the step (the timeline, auto: Note [Step observers]).
  std::unique_ptr<LocalSgdAveraging> local_sgd_;
  AmpStep amp_{AmpSettings{}, compressors::Kind::kNone};
  StepTimeline timeline_{0};
  StepObservers observers_;
  std::int64_t steps_ = 0;
  // Last, so that they are destroyed first: their threads run jobs over the members above. The
  // buckets' jobs, and streaming diloco's fragment exchanges (Note [Streaming DiLoCo]).
  struct Engines {
    std::unique_ptr<Engine> buckets;
    std::unique_ptr<Engine> fragments;
  } engines_;
};

}  // namespace gw
