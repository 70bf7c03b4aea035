#include "reference_trainer/app/training_run.h"

#include <cmath>
#include <cstdio>
#include <sstream>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/device.h"
#include "plugin/config_check.h"
#include "reference_trainer/app/checkpoint.h"
#include "reference_trainer/app/checkpoint_files.h"
#include "reference_trainer/app/checkpoint_restore.h"
#include "reference_trainer/app/evaluation.h"
#include "reference_trainer/app/output_room.h"
#include "reference_trainer/app/parameter_file.h"
#include "reference_trainer/app/per_rank_figures.h"
#include "reference_trainer/app/run_identity.h"
#include "reference_trainer/app/trainer.h"
#include "sync_policies/sync_policy.h"

namespace gw::trainer {
namespace {

DistributedOptimizerOptions optimizer_options(const config::Config& config,
                                              const kernels::Stream& stream) {
  DistributedOptimizerOptions o;
  o.config = config;
  o.read_environment = false;  // `config` already holds the environment
  o.stream = stream;
  return o;
}

// Note [Diverged runs]
// A non-finite training loss (outside mixed precision, where an overflowing step is skipped and
// the loss scale backs off) means the run has diverged: its parameters are, or are about to be,
// NaN, and every further step is wasted. The ranks must stop at the same step, since the rest of
// the run (evaluation, the report) is collective, and a rank cannot know another's loss. So after
// every step the ranks take the minimum over the ranks whose loss is not finite (the world size
// when none), with the step where each saw it, one 8-byte allreduce counted as control traffic
// (DivergenceVote). The run then ends as at a time
// budget (the epoch's evaluation, the report with a "diverged" entry) and gradwire_train exits
// with code 3 on every rank. Under mixed precision a step that overflows is skipped instead, and
// the scale backs off; but a scale at its floor that still overflows step after step
// (kStuckSkips in a row) cannot back off any further, and that run has diverged too.
//
// Under streaming diloco with a delay (Note [Streaming DiLoCo]) a fragment's exchange overlaps
// the next steps, and any collective of the trainer's waits for it; so the vote is taken only
// after steps with no exchange in flight (the same steps on every rank), and at least once every
// H steps, each rank voting on what it saw since the last vote. A run then stops at most H - 1
// steps after the step whose loss was not finite, and the report names that step.
constexpr std::int64_t kStuckSkips = 8;

}  // namespace

TrainingRun::TrainingRun(const TrainerOptions& options, const config::Config& config,
                         const FashionMnist& data, std::shared_ptr<CountingCommunicator> comm,
                         const kernels::Stream& stream)
    : options_(options),
      data_(data),
      comm_(std::move(comm)),
      model_(make_training_model(options.model, options.seed, data, stream)),
      optimizer_(comm_, make_optimizer(options, stream), model_->parameter_specs(),
                 optimizer_options(config, stream)),
      sharder_(data.train.size(), comm_->size(), comm_->rank(), options.batch_size, options.seed,
               optimizer_.accumulation_steps()),
      identity_(run_identity(options, config, comm_->size(), data.train.size(), data.test.size())),
      schedule_(options.schedule),
      checkpoints_(options.checkpoint, comm_->rank()),
      traffic_(*comm_),
      progress_(ProgressOutput::to_stderr(comm_->rank() == 0 && options.output.progress,
                                          options.output.progress_every)) {
  model_->bind_gradients(optimizer_.gradient_views());
  // Mixed precision: every op of the model consults the policy the optimizer read
  // (GRADWIRE_AMP_ALLOW / GRADWIRE_AMP_DENY over the defaults), and backward scales the loss.
  const AmpSettings& amp = optimizer_.amp_settings();
  if (amp.enabled) model_->set_op_policy(&amp.ops);
  result_.world_size = comm_->size();
  result_.accumulation_steps = sharder_.passes();
  result_.parameters = model_->num_parameters();
  result_.model_description = model_->describe();
  if (comm_->rank() == 0) {
    const int passes = sharder_.passes();
    std::printf("gradwire_train: %s | %s | %d ranks x batch %zu%s | %zu steps/epoch\n",
                result_.model_description.c_str(), optimizer_.inner().name().c_str(), comm_->size(),
                options.batch_size,
                passes > 1 ? (" x " + std::to_string(passes) + " backward passes").c_str() : "",
                sharder_.steps_per_epoch());
    std::fflush(stdout);
  }
}

void TrainingRun::resume(const Checkpoint& c) {
  agree_on_startup_errors(
      *comm_, [&] { restore_checkpoint(c, *model_, optimizer_, sharder_.steps_per_epoch()); });
  result_.steps = c.steps;
  result_.epochs = c.figures.epochs;
  result_.history = c.figures.history;
  result_.samples = c.figures.samples;
  result_.train_seconds = c.figures.train_seconds;
  checkpoints_.resumed_from(c.steps);
  traffic_.resume_from(c.figures.traffic);
  stats_.resume_from(c.figures.sync, c.figures.compression);
  timer_ = StepTimer(c.steps);
  wall_.before = c.figures.wall_seconds;
  // The run goes on inside the epoch it was saved in, with that epoch's figures so far.
  epoch_.number = static_cast<int>(c.epoch);
  epoch_.steps_done = static_cast<std::size_t>(c.step_in_epoch);
  epoch_.loss_sum = c.figures.epoch_loss_sum;
  epoch_.traffic_start = c.figures.epoch_traffic_start;
  epoch_.trained_before = c.figures.epoch_train_seconds;
  epoch_.wall_before = c.figures.epoch_wall_seconds;
}

void TrainingRun::start() { wall_.run_start = synchronized_now(*comm_) - wall_.before; }

// Note [Room for what a run writes]
void TrainingRun::check_room_for_outputs() {
  room_checked_ = true;
  epoch_.clock->pause();
  std::vector<OutputRoom> outputs;
  if (!checkpoints_.file().empty()) {
    Checkpoint c;  // but for its figures
    c.identity = identity_;
    c.parameters = model_->parameters();
    std::ostringstream state;
    optimizer_.save_state(state);
    c.optimizer_state = state.str();
    outputs.push_back({checkpoints_.file(), "--checkpoint", true, serialize_checkpoint(c).size()});
  }
  if (comm_->rank() == 0 && !options_.output.save_params_path.empty()) {
    outputs.push_back({options_.output.save_params_path, "--save-params", false,
                       parameter_file_bytes(model_->num_parameters())});
  }
  // Not the run's traffic: a resumed run checks again, and must count what a straight run counts.
  traffic_.without([&] {
    agree_on_room(*comm_, outputs, [&](FaultPhase phase) {  // Note [Faults the suite injects]
      inject_faults(options_.faults, comm_->rank(), result_.steps, phase);
    });
  });
  epoch_.clock->resume();
}

bool TrainingRun::more_epochs() const {
  return epoch_.number <= schedule_.epochs() && !reached_max_steps() && !stop_;
}

void TrainingRun::train_epoch() {
  begin_epoch();
  const std::size_t per_epoch = sharder_.steps_per_epoch();
  while (epoch_.steps_done < per_epoch && !reached_max_steps()) {
    if (!step()) break;
    const bool at_end = epoch_.steps_done == per_epoch || reached_max_steps();
    if (schedule_.evaluation_due(result_.steps, at_end) && !evaluate_inside_epoch()) break;
    if (epoch_.steps_done < per_epoch && checkpoints_.due_inside_epoch(result_.steps)) {
      checkpoint_inside_epoch();
    }
  }
  progress_.finish();
  end_epoch();
}

void TrainingRun::begin_epoch() {
  if (!epoch_.traffic_start) epoch_.traffic_start = traffic_.now();
  epoch_.clock.emplace(*comm_, epoch_.trained_before, epoch_.wall_before);
}

bool TrainingRun::step() {
  const kernels::Stream& stream = model_->stream();
  const Model::GradientReadyFn on_ready = [this](std::size_t i) { optimizer_.gradient_ready(i); };
  timer_.begin(result_.steps, stream);
  // Under gradient accumulation the passes before the last add their gradients up at step()
  // (Note [Gradient accumulation]); the step's loss is the passes' mean.
  double loss = 0;
  for (int pass = 0; pass < sharder_.passes(); ++pass) {
    sharder_.batch(static_cast<std::uint64_t>(epoch_.number - 1), epoch_.steps_done, indices_,
                   pass);
    const double pass_loss = model_->train_step(indices_, on_ready, optimizer_.loss_scale());
    optimizer_.report_loss(pass_loss);
    loss += pass_loss;
    if (pass + 1 < sharder_.passes()) optimizer_.step();
  }
  loss /= sharder_.passes();
  timer_.backward_done(result_.steps, stream);
  epoch_.loss_sum += loss;
  const std::int64_t skipped_before =
      optimizer_.loss_scaler() != nullptr ? optimizer_.loss_scaler()->skipped_steps() : 0;
  optimizer_.step();
  timer_.end(result_.steps, stream, optimizer_.last_exchange_ms());
  ++result_.steps;
  ++epoch_.steps_done;
  inject_faults(options_.faults, comm_->rank(), result_.steps, FaultPhase::kStep);
  const amp::LossScaler* scaler = optimizer_.loss_scaler();
  const bool skipped = scaler != nullptr && scaler->skipped_steps() > skipped_before;
  const bool stuck = skipped && scaler->at_floor() && scaler->consecutive_skips() >= kStuckSkips;
  const std::optional<DivergenceVote::Diverged> diverged =
      vote_.after_step(!std::isfinite(loss) && !skipped, stuck, loss, result_.steps - 1,
                       optimizer_.exchange_in_flight(), optimizer_.sync_policy().period(), *comm_);
  if (diverged) {
    const int bad = diverged->rank;
    const std::string at = " at step " + std::to_string(diverged->step);
    const std::string why =
        diverged->stuck
            ? "the loss scale of rank " + std::to_string(bad) + " is at its floor (" +
                  std::to_string(scaler->scale()) + ") and its last " +
                  std::to_string(scaler->consecutive_skips()) +
                  " steps overflowed and were skipped" + at
            : "the training loss of rank " + std::to_string(bad) + " is not finite" + at +
                  (comm_->rank() == bad ? " (" + std::to_string(diverged->loss) + ")" : "");
    result_.diverged = Divergence{result_.steps, why + "; the run stopped there"};
    stop_ = true;
    return false;
  }
  // The same on every rank: mixed precision's skip is agreed.
  if (!room_checked_ && !skipped) check_room_for_outputs();
  progress_.update(epoch_.number, schedule_.epochs(), epoch_.steps_done, sharder_.steps_per_epoch(),
                   epoch_.loss_sum / epoch_.steps_done);
  return true;
}

bool TrainingRun::evaluate_inside_epoch() {
  const double pause = epoch_.clock->pause();
  const double trained = result_.train_seconds + epoch_.clock->trained();
  // Streaming diloco: the global model, which every rank holds (Note [Evaluation points]).
  const bool global = optimizer_.use_global_parameters();
  const Evaluation eval = evaluate_average(*model_, data_.test, *comm_, global || ranks_in_step(),
                                           schedule_.over_budget(trained));
  if (global) optimizer_.restore_own_parameters();
  record_evaluation(eval, trained, pause);
  if (comm_->rank() == 0) {
    progress_.finish();
    std::printf("  step %lld (epoch %.2f)  test_acc %.4f  trained %.1f s\n",
                static_cast<long long>(result_.steps), result_.history.back().epoch, eval.accuracy,
                trained);
    std::fflush(stdout);
  }
  epoch_.clock->resume();
  if (eval.stop) stop_ = true;
  return !eval.stop;
}

void TrainingRun::checkpoint_inside_epoch(bool last) {
  const double now = epoch_.clock->pause();
  if (last) {
    save_final_checkpoint(now);
  } else {
    save_checkpoint(now);
  }
  epoch_.clock->resume();
}

void TrainingRun::end_epoch() {
  const bool epoch_done = epoch_.steps_done == sharder_.steps_per_epoch();
  // The run ends inside this epoch (Note [When a checkpoint is taken]).
  if (!epoch_done && !result_.diverged && checkpoints_.due_at_stop(result_.steps)) {
    checkpoint_inside_epoch(/*last=*/true);
  }
  // Under local SGD, evaluate the average model (a no-op when the ranks are in step).
  optimizer_.synchronize_parameters();
  const double train_end = epoch_.clock->pause();
  // The epoch's training loss, averaged over steps and ranks.
  double loss_and_steps[2] = {epoch_.loss_sum, static_cast<double>(epoch_.steps_done)};
  comm_->allreduce(loss_and_steps, 2, DataType::kFloat64, ReduceOp::kSum, TrafficKind::kControl);
  const double trained = result_.train_seconds + epoch_.clock->trained();
  const Evaluation eval = evaluate(*model_, data_.test, *comm_, schedule_.over_budget(trained));
  // After a stop inside the epoch this is the same point again: recorded once.
  if (result_.history.empty() || result_.history.back().step != result_.steps) {
    record_evaluation(eval, trained, train_end);
  }
  if (eval.stop) stop_ = true;
  const double epoch_end = synchronized_now(*comm_);
  const double loss = loss_and_steps[1] > 0 ? loss_and_steps[0] / loss_and_steps[1] : 0.0;
  const EpochResult e = epoch_result(eval, loss, epoch_end);
  result_.train_seconds += e.train_seconds;
  result_.samples += e.samples;
  result_.epochs.push_back(e);
  if (comm_->rank() == 0) {
    std::printf(
        "epoch %d/%d  loss %.4f  test_acc %.4f  samples/s %.0f  grad MB sent %.1f  "
        "param MB sent %.1f  (%.1f s)\n",
        e.epoch, schedule_.epochs(), e.loss, e.test_accuracy,
        e.train_seconds > 0 ? static_cast<double>(e.samples) / e.train_seconds : 0.0,
        static_cast<double>(e.gradient_bytes_sent) / 1e6,
        static_cast<double>(e.parameter_bytes_sent) / 1e6, e.wall_seconds);
    std::fflush(stdout);
  }
  const bool last = stop_ || reached_max_steps() || schedule_.last_epoch(epoch_.number);
  if (epoch_done && !result_.diverged && checkpoints_.due_at_epoch_end(result_.steps, last)) {
    if (last) {
      save_final_checkpoint(synchronized_now(*comm_));
    } else {
      save_checkpoint(synchronized_now(*comm_));
    }
  }
  const int next = epoch_.number + 1;
  epoch_ = EpochProgress{};
  epoch_.number = next;
}

EpochResult TrainingRun::epoch_result(const Evaluation& eval, double loss, double epoch_end) const {
  EpochResult e;
  e.epoch = epoch_.number;
  e.loss = loss;
  e.test_accuracy = eval.accuracy;
  e.test_loss = eval.loss;
  e.train_seconds = epoch_.clock->trained();
  e.wall_seconds = epoch_end - epoch_.clock->epoch_start();
  e.samples = static_cast<std::uint64_t>(epoch_.steps_done) * sharder_.global_batch();
  const TrafficCounters after = traffic_.now();
  const TrafficCounters& before = *epoch_.traffic_start;
  e.gradient_bytes_sent =
      after[TrafficKind::kGradient].sent_bytes - before[TrafficKind::kGradient].sent_bytes;
  e.parameter_bytes_sent =
      after[TrafficKind::kParameter].sent_bytes - before[TrafficKind::kParameter].sent_bytes;
  return e;
}

void TrainingRun::record_evaluation(const Evaluation& eval, double trained, double now) {
  const TrafficCounters c = traffic_.now();
  EvalPoint p;
  p.step = result_.steps;
  p.epoch = static_cast<double>(result_.steps) / static_cast<double>(sharder_.steps_per_epoch());
  p.train_seconds = trained;
  p.wall_seconds = now - wall_.run_start;
  p.test_accuracy = eval.accuracy;
  p.test_loss = eval.loss;
  p.gradient_bytes_sent = c[TrafficKind::kGradient].sent_bytes;
  p.parameter_bytes_sent = c[TrafficKind::kParameter].sent_bytes;
  result_.history.push_back(p);
}

void TrainingRun::save_checkpoint(double now) {
  const Checkpoint c = checkpoint_at(now);
  traffic_.without([&] {
    write_checkpoint(*comm_, checkpoints_.file(), serialize_checkpoint(c), checkpoints_.rotates(),
                     [&](FaultPhase phase) {  // Note [Faults the suite injects]
                       inject_faults(options_.faults, comm_->rank(), result_.steps, phase);
                     });
  });
  checkpoints_.written(result_.steps);
}

// Note [A failed final checkpoint]
// A checkpoint that fails inside the run ends it there, on every rank (write_checkpoint agrees
// on the failure). The one where the run ends has nothing left to protect: the training is done,
// so its failure (a full disk, say) is recorded instead, the run ends as it would have, rank 0
// writes the report (checkpoints.final_error, which gives the reason of the lowest rank whose
// write failed) and the parameters, and then every rank stops with exit code 1, each rank whose
// own write failed saying why. Only the agreed
// failure is caught: a commit that fails on one rank after the agreement ends the job as any
// other error on one rank does.
void TrainingRun::save_final_checkpoint(double now) {
  try {
    save_checkpoint(now);
  } catch (const CheckpointWriteFailed& e) {
    checkpoints_.final_failed(e.what(), e.here());
  }
}

Checkpoint TrainingRun::checkpoint_at(double now) const {
  // At the epoch's end the position is the next epoch's first step, with nothing of it done.
  const bool at_end = epoch_.steps_done == sharder_.steps_per_epoch();
  Checkpoint c;
  c.rank = static_cast<std::uint32_t>(comm_->rank());
  c.world_size = static_cast<std::uint32_t>(comm_->size());
  c.steps = result_.steps;
  c.epoch = at_end ? epoch_.number + 1 : epoch_.number;
  c.step_in_epoch = at_end ? 0 : epoch_.steps_done;
  c.steps_per_epoch = sharder_.steps_per_epoch();
  c.identity = identity_;
  c.parameters = model_->parameters();
  std::ostringstream state;
  optimizer_.save_state(state);
  c.optimizer_state = state.str();
  RunFigures& f = c.figures;
  f.epoch_loss_sum = at_end ? 0.0 : epoch_.loss_sum;
  f.samples = result_.samples;
  f.traffic = traffic_.now();
  f.epoch_traffic_start = at_end ? f.traffic : *epoch_.traffic_start;
  f.epochs = result_.epochs;
  f.history = result_.history;
  f.sync = stats_.sync(optimizer_);
  f.compression = stats_.compression(optimizer_);
  f.wall_seconds = now - wall_.run_start;
  f.train_seconds = result_.train_seconds;
  f.epoch_train_seconds = at_end ? 0.0 : epoch_.clock->trained();
  f.epoch_wall_seconds = at_end ? 0.0 : now - epoch_.clock->epoch_start();
  return c;
}

bool TrainingRun::ranks_in_step() const { return optimizer_.parameters_in_step(); }

TrainResult TrainingRun::finish() {
  report_device();
  result_.wall_seconds = synchronized_now(*comm_) - wall_.run_start;
  result_.final_test_accuracy = result_.epochs.empty() ? 0.0 : result_.epochs.back().test_accuracy;
  result_.stopped_by_time_budget = stop_ && !result_.diverged;
  result_.per_rank = gather_per_rank(traffic_.now(), stats_.compression(optimizer_), *comm_);
  result_.sync = stats_.sync(optimizer_);
  report_amp();
  if (const AutoDecision* d = optimizer_.auto_decision()) result_.auto_decision = *d;
  if (comm_->rank() == 0) result_.final_parameters = model_->parameters();
  result_.checkpoints = checkpoints_.result();
  return std::move(result_);
}

void TrainingRun::report_device() {
  const kernels::Stream& stream = model_->stream();
  result_.device.kind = stream.is_host() ? "cpu" : "cuda";
  if (!stream.is_host()) {
    result_.device.name = kernels::cuda_device_name(stream.cuda_device());
    result_.device.peak_memory_bytes = kernels::cuda_memory_use().peak;
  }
  timer_.report(result_.device);
  std::tie(result_.device.fp16_products, result_.device.fp32_products) = model_->products();
}

void TrainingRun::report_amp() {
  const amp::LossScaler* scaler = optimizer_.loss_scaler();
  if (scaler == nullptr) return;
  const AmpSettings& amp = optimizer_.amp_settings();
  AmpResult& out = result_.amp;
  out.enabled = true;
  out.allow = amp.ops.ops_in(amp::OpList::kAllow);
  out.deny = amp.ops.ops_in(amp::OpList::kDeny);
  out.infer = amp.ops.ops_in(amp::OpList::kInfer);
  out.gradient_wire = optimizer_.gradient_wire();
  out.dynamic = scaler->options().dynamic;
  out.init_scale = scaler->options().init_scale;
  out.final_scale = scaler->scale();
  out.skipped_steps = scaler->skipped_steps();
  out.scale_history = scaler->history();
}

}  // namespace gw::trainer
