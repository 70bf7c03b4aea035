#include "reference_trainer/app/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <tuple>

#include "kernels/device.h"
#include "plugin/config_check.h"
#include "plugin/distributed_optimizer.h"
#include "reference_trainer/app/checkpoint.h"
#include "reference_trainer/app/checkpoint_files.h"
#include "reference_trainer/app/progress.h"
#include "reference_trainer/app/run_identity.h"
#include "reference_trainer/app/training_model.h"
#include "reference_trainer/data/sharder.h"
#include "reference_trainer/optim/adam.h"
#include "reference_trainer/optim/sgd.h"
#include "sync_policies/sync_policy.h"

namespace gw::trainer {

std::unique_ptr<Optimizer> make_optimizer(const TrainerOptions& o, const kernels::Stream& stream) {
  if (o.optimizer == "adam") {
    Adam::Options a;
    a.lr = o.lr;
    a.weight_decay = o.weight_decay;
    a.stream = stream;
    return std::make_unique<Adam>(a);
  }
  Sgd::Options s;
  s.stream = stream;
  s.lr = o.lr;
  s.momentum = o.momentum;
  s.nesterov = o.nesterov;
  s.weight_decay = o.weight_decay;
  return std::make_unique<Sgd>(s);
}

namespace {

// Wall time on rank 0 after every rank has arrived: the time of the slowest rank.
double synchronized_now(Communicator& comm) {
  comm.barrier();
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Evaluation {
  double accuracy = 0;
  double loss = 0;
  bool stop = false;  // rank 0 voted to stop (its time budget ran out)
};

// Each rank evaluates a contiguous slice of the test set; the sums, and rank 0's vote to stop,
// are combined with one allreduce (control traffic).
Evaluation evaluate(TrainingModel& model, const Dataset& test, Communicator& comm, bool stop_vote) {
  const std::size_t n = static_cast<std::size_t>(comm.size());
  const std::size_t r = static_cast<std::size_t>(comm.rank());
  const std::size_t begin = test.size() * r / n, end = test.size() * (r + 1) / n;
  constexpr std::size_t kChunk = 500;
  // loss, correct, count, stop votes
  double sums[4] = {0, 0, static_cast<double>(end - begin), r == 0 && stop_vote ? 1.0 : 0.0};
  for (std::size_t i = begin; i < end; i += kChunk) {
    const std::size_t b = std::min(kChunk, end - i);
    std::int64_t correct = 0;
    model.evaluate_test(i, i + b, &sums[0], &correct);
    sums[1] += static_cast<double>(correct);
  }
  comm.allreduce(sums, 4, DataType::kFloat64, ReduceOp::kSum, TrafficKind::kControl);
  return Evaluation{sums[1] / sums[2], sums[0] / sums[2], sums[3] > 0};
}

// Note [Evaluation points]
// An evaluation inside an epoch (--eval-every) must not change the run it measures. Under
// synchronous SGD the ranks hold the same parameters and evaluate them. Under a local SGD policy
// they have drifted apart, and an averaging through the optimizer (synchronize_parameters, as at
// the end of an epoch) would add an averaging point the schedule did not have. So the average is
// taken into the model for the evaluation only, with an allreduce counted as control traffic, and
// each rank's own parameters are put back afterwards: the training goes on exactly as without the
// evaluation, and its gradient and parameter bytes are unchanged. Evaluation time is kept out of
// the training clock (and so out of time-to-accuracy figures); the barriers around it are too.
Evaluation evaluate_average(TrainingModel& model, const Dataset& test, Communicator& comm,
                            bool ranks_in_step, bool stop_vote) {
  if (ranks_in_step || comm.size() == 1) return evaluate(model, test, comm, stop_vote);
  const std::vector<float> own = model.parameters();
  std::vector<float> average = own;
  comm.allreduce(average.data(), average.size(), DataType::kFloat32, ReduceOp::kSum,
                 TrafficKind::kControl);
  const float inv = 1.0f / static_cast<float>(comm.size());
  for (float& v : average) v *= inv;
  model.set_parameters(average.data());
  const Evaluation e = evaluate(model, test, comm, stop_vote);
  model.set_parameters(own.data());
  return e;
}

// Note [Diverged runs]
// A non-finite training loss (outside mixed precision, where an overflowing step is skipped and
// the loss scale backs off) means the run has diverged: its parameters are, or are about to be,
// NaN, and every further step is wasted. The ranks must stop at the same step, since the rest of
// the run (evaluation, the report) is collective, and a rank cannot know another's loss. So after
// every step the ranks take the minimum over the ranks whose loss is not finite (the world size
// when none), one 8-byte allreduce counted as control traffic. The run then ends as at a time
// budget (the epoch's evaluation, the report with a "diverged" entry) and gradwire_train exits
// with code 3 on every rank.
// Returns the lowest rank whose loss is not finite, or -1.
int first_diverged_rank(double loss, bool skipped_by_amp, Communicator& comm) {
  std::int64_t rank = !std::isfinite(loss) && !skipped_by_amp ? comm.rank() : comm.size();
  comm.allreduce(&rank, 1, DataType::kInt64, ReduceOp::kMin, TrafficKind::kControl);
  return rank < comm.size() ? static_cast<int>(rank) : -1;
}

// Every rank's `count` figures, rank after rank (control traffic).
std::vector<std::int64_t> gather_fields(const std::int64_t* mine, std::size_t count,
                                        Communicator& comm) {
  const auto n = static_cast<std::size_t>(comm.size());
  std::vector<std::int64_t> all(count * n);
  comm.allgatherv(mine, count, all.data(), std::vector<std::size_t>(n, count), DataType::kInt64,
                  TrafficKind::kControl);
  return all;
}

// `mine`: this rank's run counters, taken before the gather (which is not part of the run's
// traffic).
std::vector<TrafficCounters> gather_traffic(const TrafficCounters& mine, Communicator& comm) {
  constexpr std::size_t kPerKind = 5;
  constexpr std::size_t kKinds = kNumTrafficKinds;
  constexpr std::size_t kFields = kPerKind * kKinds;
  std::int64_t send[kFields];
  for (std::size_t k = 0; k < kKinds; ++k) {
    const TrafficCounters::Kind& c = mine.kinds[k];
    const std::uint64_t fields[kPerKind] = {c.sent_bytes, c.received_bytes, c.calls,
                                            c.inter_node_sent_bytes, c.inter_node_received_bytes};
    for (std::size_t f = 0; f < kPerKind; ++f) {
      send[kPerKind * k + f] = static_cast<std::int64_t>(fields[f]);
    }
  }
  const std::vector<std::int64_t> all = gather_fields(send, kFields, comm);
  std::vector<TrafficCounters> out(static_cast<std::size_t>(comm.size()));
  for (std::size_t r = 0; r < out.size(); ++r) {
    for (std::size_t k = 0; k < kKinds; ++k) {
      const auto field = [&](std::size_t f) {
        return static_cast<std::uint64_t>(all[r * kFields + kPerKind * k + f]);
      };
      TrafficCounters::Kind& c = out[r].kinds[k];
      c.sent_bytes = field(0);
      c.received_bytes = field(1);
      c.calls = field(2);
      c.inter_node_sent_bytes = field(3);
      c.inter_node_received_bytes = field(4);
    }
  }
  return out;
}

// The byte figures differ by rank; the step and exchange counts are the same on every rank
// (Note [Plans agree across ranks]), so they are taken from this rank's.
std::vector<CompressionStats> gather_compression(const CompressionStats& mine, Communicator& comm) {
  constexpr std::size_t kFields = 2;
  const std::int64_t send[kFields] = {static_cast<std::int64_t>(mine.gradient_bytes_after_warmup),
                                      static_cast<std::int64_t>(mine.dense_bytes_per_step)};
  const std::vector<std::int64_t> all = gather_fields(send, kFields, comm);
  std::vector<CompressionStats> out(static_cast<std::size_t>(comm.size()), mine);
  for (std::size_t r = 0; r < out.size(); ++r) {
    out[r].gradient_bytes_after_warmup = static_cast<std::uint64_t>(all[r * kFields]);
    out[r].dense_bytes_per_step = static_cast<std::uint64_t>(all[r * kFields + 1]);
  }
  return out;
}

TrafficCounters operator+(TrafficCounters a, const TrafficCounters& b) {
  for (int k = 0; k < kNumTrafficKinds; ++k) {
    a.kinds[k].sent_bytes += b.kinds[k].sent_bytes;
    a.kinds[k].received_bytes += b.kinds[k].received_bytes;
    a.kinds[k].calls += b.kinds[k].calls;
    a.kinds[k].inter_node_sent_bytes += b.kinds[k].inter_node_sent_bytes;
    a.kinds[k].inter_node_received_bytes += b.kinds[k].inter_node_received_bytes;
  }
  return a;
}

TrafficCounters operator-(TrafficCounters a, const TrafficCounters& b) {
  for (int k = 0; k < kNumTrafficKinds; ++k) {
    a.kinds[k].sent_bytes -= b.kinds[k].sent_bytes;
    a.kinds[k].received_bytes -= b.kinds[k].received_bytes;
    a.kinds[k].calls -= b.kinds[k].calls;
    a.kinds[k].inter_node_sent_bytes -= b.kinds[k].inter_node_sent_bytes;
    a.kinds[k].inter_node_received_bytes -= b.kinds[k].inter_node_received_bytes;
  }
  return a;
}

// This rank's traffic of the run: the communicator's counters, continued from a checkpoint's
// after a resume, without what only a stopped-and-resumed run sends (its start-up and the resume
// agreement) and without the checkpoint writes (See Note [Checkpoint figures]). A run that
// neither resumes nor checkpoints counts exactly what the communicator counts.
class RunTraffic {
 public:
  explicit RunTraffic(const CountingCommunicator& comm) : comm_(comm) {}
  TrafficCounters now() const { return base_ + comm_.counters() - left_out_; }
  // Continues from `saved`, leaving out everything this process has sent so far.
  void resume_from(const TrafficCounters& saved) {
    base_ = saved;
    left_out_ = comm_.counters();
  }
  // Runs `f`, leaving its traffic out.
  template <typename F>
  void without(F&& f) {
    const TrafficCounters before = comm_.counters();
    f();
    left_out_ = left_out_ + (comm_.counters() - before);
  }

 private:
  const CountingCommunicator& comm_;
  TrafficCounters base_, left_out_;
};

// The sync policy's and the compressor's figures of the whole run: a checkpoint's, then this
// process's (DistributedOptimizer::load_state starts them from zero).
SyncStats merged(const SyncStats& before, const SyncStats& mine) {
  SyncStats out = before;
  out.policy = mine.policy;
  out.gradient_exchanges += mine.gradient_exchanges;
  out.parameter_exchanges += mine.parameter_exchanges;
  out.state_exchanges += mine.state_exchanges;
  out.points.insert(out.points.end(), mine.points.begin(), mine.points.end());
  return out;
}

CompressionStats merged(const CompressionStats& before, const CompressionStats& mine) {
  CompressionStats out = mine;
  out.steps_after_warmup += before.steps_after_warmup;
  out.gradient_bytes_after_warmup += before.gradient_bytes_after_warmup;
  out.sparse_exchanges += before.sparse_exchanges;
  out.dense_fallbacks += before.dense_fallbacks;
  return out;
}

// Puts this rank's parameters and optimizer state back as `c` holds them.
void restore(const Checkpoint& c, TrainingModel& model, DistributedOptimizer& optimizer,
             std::size_t steps_per_epoch) {
  const auto mismatch = [](const std::string& what) { throw CheckpointError("--resume: " + what); };
  if (c.steps_per_epoch != steps_per_epoch) {
    mismatch("the checkpoint has " + std::to_string(c.steps_per_epoch) +
             " steps per epoch, this run " + std::to_string(steps_per_epoch));
  }
  if (c.parameters.size() != model.num_parameters()) {
    mismatch("the checkpoint holds " + std::to_string(c.parameters.size()) +
             " parameters, this model has " + std::to_string(model.num_parameters()));
  }
  model.set_parameters(c.parameters.data());
  std::istringstream in(c.optimizer_state);
  try {
    optimizer.load_state(in);
  } catch (const std::exception& e) {
    mismatch(std::string("the optimizer state: ") + e.what());
  }
  if (in.peek() != std::char_traits<char>::eof()) {
    mismatch("the optimizer state has bytes after its end");
  }
  if (optimizer.steps() != c.steps) {
    mismatch("the optimizer state is at step " + std::to_string(optimizer.steps()) +
             ", the checkpoint at step " + std::to_string(c.steps));
  }
}

}  // namespace

TrainResult train(const TrainerOptions& options, const config::Config& config,
                  const FashionMnist& data, std::shared_ptr<CountingCommunicator> comm,
                  const Checkpoint* resume, const kernels::Stream& stream) {
  const int world = comm->size(), rank = comm->rank();
  const bool is_root = rank == 0;

  // Note [The trainer on a device]
  std::unique_ptr<TrainingModel> model =
      make_training_model(options.model, options.seed, data, stream);
  DistributedOptimizerOptions dopt_options;
  dopt_options.config = config;
  dopt_options.read_environment = false;  // `config` already holds the environment
  dopt_options.stream = stream;
  DistributedOptimizer optimizer(comm, make_optimizer(options, stream), model->parameter_specs(),
                                 dopt_options);
  model->bind_gradients(optimizer.gradient_views());
  // Mixed precision: every op of the model consults the policy the optimizer read
  // (GRADWIRE_AMP_ALLOW / GRADWIRE_AMP_DENY over the defaults), and backward scales the loss.
  const AmpSettings& amp = optimizer.amp_settings();
  if (amp.enabled) model->set_op_policy(&amp.ops);

  EpochSharder sharder(data.train.size(), world, rank, options.batch_size, options.seed);
  const std::size_t steps_per_epoch = sharder.steps_per_epoch();

  TrainResult result;
  result.world_size = world;
  result.parameters = model->num_parameters();
  result.model_description = model->describe();
  if (is_root) {
    std::printf("gradwire_train: %s | %s | %d ranks x batch %zu | %zu steps/epoch\n",
                result.model_description.c_str(), optimizer.inner().name().c_str(), world,
                options.batch_size, steps_per_epoch);
    std::fflush(stdout);
  }

  std::vector<std::size_t> indices;
  struct StepEvents {
    kernels::Event begin, backward_end, end;
  };
  StepEvents step_events[2];
  // The first step of this process (allocations, cuDNN's and cuBLAS's set-up) is not timed.
  const std::int64_t first_timed_step = resume != nullptr ? resume->steps : 0;
  double compute_ms = 0, after_backward_ms = 0, exchange_ms = 0;
  std::int64_t exchange_steps = 0;
  std::int64_t timed_steps = 0;
  const Model::GradientReadyFn on_ready = [&optimizer](std::size_t i) {
    optimizer.gradient_ready(i);
  };
  ProgressOutput progress =
      ProgressOutput::to_stderr(is_root && options.progress, options.progress_every);

  // Resuming: the model and optimizer as the checkpoint has them (a failure on any rank stops
  // every rank, exit code 2), and the figures so far (Note [Checkpoint figures]).
  RunTraffic traffic(*comm);
  if (resume != nullptr) {
    agree_on_startup_errors(*comm, [&] { restore(*resume, *model, optimizer, steps_per_epoch); });
    result.steps = resume->steps;
    result.epochs = resume->figures.epochs;
    result.history = resume->figures.history;
    result.samples = resume->figures.samples;
    result.train_seconds = resume->figures.train_seconds;
    result.resumed_from_step = resume->steps;
    traffic.resume_from(resume->figures.traffic);
  }
  const SyncStats sync_before = resume != nullptr ? resume->figures.sync : SyncStats{};
  const CompressionStats compression_before =
      resume != nullptr ? resume->figures.compression : CompressionStats{};
  const std::string checkpoint_file =
      options.checkpoint_path.empty() ? "" : checkpoint_rank_path(options.checkpoint_path, rank);
  const std::string identity =
      run_identity(options, config, world, data.train.size(), data.test.size());

  const double run_start =
      synchronized_now(*comm) - (resume != nullptr ? resume->figures.wall_seconds : 0.0);
  const auto reached_max_steps = [&] {
    return options.max_steps > 0 && result.steps >= options.max_steps;
  };
  const bool ranks_in_step = optimizer.sync_policy().mode() == sync_policies::SyncMode::kEveryStep;
  // Records one evaluation point: `trained` seconds of training so far, at wall time `now`.
  const auto record = [&](const Evaluation& eval, double trained, double now) {
    const TrafficCounters c = traffic.now();
    EvalPoint p;
    p.step = result.steps;
    p.epoch = static_cast<double>(result.steps) / static_cast<double>(steps_per_epoch);
    p.train_seconds = trained;
    p.wall_seconds = now - run_start;
    p.test_accuracy = eval.accuracy;
    p.test_loss = eval.loss;
    p.gradient_bytes_sent = c[TrafficKind::kGradient].sent_bytes;
    p.parameter_bytes_sent = c[TrafficKind::kParameter].sent_bytes;
    result.history.push_back(p);
  };
  const auto over_budget = [&](double trained) {
    return options.time_budget > 0 && trained >= options.time_budget;
  };
  // Note [When a checkpoint is taken]
  // A checkpoint holds the state from which a straight run takes its next step, so that a run
  // resumed from it continues exactly as the straight one (bit for bit). Two places differ:
  // - Inside an epoch (every --checkpoint-every steps, or where --max-steps or --time-budget ends
  //   the run), it is written after the step and any evaluation (which leaves the training as it
  //   was, Note [Evaluation points]), and before the end-of-run evaluation: under local SGD that
  //   averages the parameters (synchronize_parameters), which a straight run going on past this
  //   step does not do.
  // - At an epoch's end, it is written after the epoch's averaging and evaluation, which a
  //   straight run does too, with the position at the next epoch's first step.
  // A diverged run writes no checkpoint at its end: the last one before is the one to go back to.
  // The time a write takes is left out of the training time, as an evaluation's is.
  // Writes the checkpoint before step `next_step` of `epoch` (steps_per_epoch: at its end), with
  // the epoch's figures so far, at synchronized time `now`.
  const auto write_checkpoint_now = [&](int epoch, std::size_t next_step, double epoch_loss_sum,
                                        const TrafficCounters& epoch_traffic_start,
                                        double epoch_train, double now, double epoch_start) {
    const bool at_end = next_step == steps_per_epoch;
    Checkpoint c;
    c.rank = static_cast<std::uint32_t>(rank);
    c.world_size = static_cast<std::uint32_t>(world);
    c.steps = result.steps;
    c.epoch = at_end ? epoch + 1 : epoch;
    c.step_in_epoch = at_end ? 0 : next_step;
    c.steps_per_epoch = steps_per_epoch;
    c.identity = identity;
    c.parameters = model->parameters();
    std::ostringstream state;
    optimizer.save_state(state);
    c.optimizer_state = state.str();
    RunFigures& f = c.figures;
    f.epoch_loss_sum = at_end ? 0.0 : epoch_loss_sum;
    f.samples = result.samples;
    f.traffic = traffic.now();
    f.epoch_traffic_start = epoch_traffic_start;
    f.epochs = result.epochs;
    f.history = result.history;
    f.sync = merged(sync_before, optimizer.sync_stats());
    f.compression = merged(compression_before, optimizer.compression_stats());
    f.wall_seconds = now - run_start;
    f.train_seconds = result.train_seconds;
    f.epoch_train_seconds = at_end ? 0.0 : epoch_train;
    f.epoch_wall_seconds = at_end ? 0.0 : now - epoch_start;
    traffic.without([&] { write_checkpoint(*comm, checkpoint_file, serialize_checkpoint(c)); });
    result.last_checkpoint_step = result.steps;
    ++result.checkpoints_written;
  };
  bool stop = false;
  const int first_epoch = resume != nullptr ? static_cast<int>(resume->epoch) : 1;
  for (int epoch = first_epoch; epoch <= options.epochs && !reached_max_steps() && !stop; ++epoch) {
    // A resumed run goes on inside the epoch it was saved in, with its figures so far.
    const bool continued = resume != nullptr && epoch == first_epoch;
    EpochResult e;
    e.epoch = epoch;
    const TrafficCounters before = continued ? resume->figures.epoch_traffic_start : traffic.now();
    const double resumed_at = synchronized_now(*comm);
    const double epoch_start = resumed_at - (continued ? resume->figures.epoch_wall_seconds : 0);
    double segment_start = resumed_at;
    double epoch_train = continued ? resume->figures.epoch_train_seconds : 0;
    double loss_sum = continued ? resume->figures.epoch_loss_sum : 0;
    std::size_t steps_done = continued ? static_cast<std::size_t>(resume->step_in_epoch) : 0;
    // Pauses the training clock around a checkpoint written inside the epoch.
    const auto checkpoint_inside_epoch = [&] {
      const double pause = synchronized_now(*comm);
      epoch_train += pause - segment_start;
      write_checkpoint_now(epoch, steps_done, loss_sum, before, epoch_train, pause, epoch_start);
      segment_start = synchronized_now(*comm);
    };
    for (std::size_t step = steps_done; step < steps_per_epoch; ++step) {
      if (reached_max_steps()) break;
      sharder.batch(static_cast<std::uint64_t>(epoch - 1), step, indices);
      // The step's time on the model's stream (Note [The trainer on a device]): read one step
      // late, when train_step has waited for the stream anyway.
      StepEvents& ev = step_events[result.steps % 2];
      ev.begin.record(model->stream());
      const double loss = model->train_step(indices, on_ready, optimizer.loss_scale());
      ev.backward_end.record(model->stream());
      if (result.steps > first_timed_step + 1) {
        const StepEvents& prev = step_events[(result.steps - 1) % 2];
        compute_ms += prev.backward_end.elapsed_ms_since(prev.begin);
        after_backward_ms += prev.end.elapsed_ms_since(prev.backward_end);
        ++timed_steps;
      }
      loss_sum += loss;
      optimizer.report_loss(loss);
      const std::int64_t skipped_before =
          optimizer.loss_scaler() != nullptr ? optimizer.loss_scaler()->skipped_steps() : 0;
      optimizer.step();
      ev.end.record(model->stream());
      if (result.steps > first_timed_step) {
        exchange_ms += optimizer.last_exchange_ms();
        ++exchange_steps;
      }
      ++result.steps;
      ++steps_done;
      const bool skipped = optimizer.loss_scaler() != nullptr &&
                           optimizer.loss_scaler()->skipped_steps() > skipped_before;
      if (const int bad = first_diverged_rank(loss, skipped, *comm); bad >= 0) {
        result.diverged = true;
        result.diverged_step = result.steps;
        result.diverged_message = "the training loss of rank " + std::to_string(bad) +
                                  " is not finite at step " + std::to_string(result.steps - 1) +
                                  (rank == bad ? " (" + std::to_string(loss) + ")" : "") +
                                  "; the run stopped there";
        stop = true;
        break;
      }
      progress.update(epoch, options.epochs, step + 1, steps_per_epoch, loss_sum / steps_done);
      if (options.eval_every > 0 && result.steps % options.eval_every == 0 &&
          step + 1 < steps_per_epoch && !reached_max_steps()) {
        const double pause = synchronized_now(*comm);
        epoch_train += pause - segment_start;
        const double trained = result.train_seconds + epoch_train;
        const Evaluation eval =
            evaluate_average(*model, data.test, *comm, ranks_in_step, over_budget(trained));
        record(eval, trained, pause);
        if (is_root) {
          progress.finish();
          std::printf("  step %lld (epoch %.2f)  test_acc %.4f  trained %.1f s\n",
                      static_cast<long long>(result.steps), result.history.back().epoch,
                      eval.accuracy, trained);
          std::fflush(stdout);
        }
        segment_start = synchronized_now(*comm);
        if (eval.stop) {
          stop = true;
          break;
        }
      }
      if (!checkpoint_file.empty() && options.checkpoint_every > 0 &&
          result.steps % options.checkpoint_every == 0 && steps_done < steps_per_epoch) {
        checkpoint_inside_epoch();
      }
    }
    progress.finish();
    const bool epoch_done = steps_done == steps_per_epoch;
    // The run ends inside this epoch (Note [When a checkpoint is taken]).
    if (!checkpoint_file.empty() && !epoch_done && !result.diverged &&
        result.last_checkpoint_step != result.steps) {
      checkpoint_inside_epoch();
    }
    // Under local SGD, evaluate the average model (a no-op when the ranks are in step).
    optimizer.synchronize_parameters();
    const double train_end = synchronized_now(*comm);
    epoch_train += train_end - segment_start;
    // The epoch's training loss, averaged over steps and ranks.
    double loss_and_steps[2] = {loss_sum, static_cast<double>(steps_done)};
    comm->allreduce(loss_and_steps, 2, DataType::kFloat64, ReduceOp::kSum, TrafficKind::kControl);
    const double trained = result.train_seconds + epoch_train;
    const Evaluation eval = evaluate(*model, data.test, *comm, over_budget(trained));
    // After a stop inside the epoch this is the same point again: recorded once.
    if (result.history.empty() || result.history.back().step != result.steps) {
      record(eval, trained, train_end);
    }
    if (eval.stop) stop = true;
    const double epoch_end = synchronized_now(*comm);

    e.loss = loss_and_steps[1] > 0 ? loss_and_steps[0] / loss_and_steps[1] : 0.0;
    e.test_accuracy = eval.accuracy;
    e.test_loss = eval.loss;
    e.train_seconds = epoch_train;
    e.wall_seconds = epoch_end - epoch_start;
    e.samples = static_cast<std::uint64_t>(steps_done) * sharder.global_batch();
    const TrafficCounters after = traffic.now();
    e.gradient_bytes_sent =
        after[TrafficKind::kGradient].sent_bytes - before[TrafficKind::kGradient].sent_bytes;
    e.parameter_bytes_sent =
        after[TrafficKind::kParameter].sent_bytes - before[TrafficKind::kParameter].sent_bytes;
    result.train_seconds += e.train_seconds;
    result.samples += e.samples;
    result.epochs.push_back(e);
    if (is_root) {
      std::printf(
          "epoch %d/%d  loss %.4f  test_acc %.4f  samples/s %.0f  grad MB sent %.1f  "
          "param MB sent %.1f  (%.1f s)\n",
          epoch, options.epochs, e.loss, e.test_accuracy,
          e.train_seconds > 0 ? static_cast<double>(e.samples) / e.train_seconds : 0.0,
          static_cast<double>(e.gradient_bytes_sent) / 1e6,
          static_cast<double>(e.parameter_bytes_sent) / 1e6, e.wall_seconds);
      std::fflush(stdout);
    }
    if (!checkpoint_file.empty() && epoch_done && !result.diverged) {
      const bool due = options.checkpoint_every > 0 && result.steps % options.checkpoint_every == 0;
      const bool last = stop || reached_max_steps() || epoch == options.epochs;
      if (due || last) {
        write_checkpoint_now(epoch, steps_per_epoch, 0.0, traffic.now(), 0.0,
                             synchronized_now(*comm), 0.0);
      }
    }
  }
  result.device.kind = model->stream().is_host() ? "cpu" : "cuda";
  if (!model->stream().is_host()) {
    result.device.name = kernels::cuda_device_name(model->stream().cuda_device());
    result.device.peak_memory_bytes = kernels::cuda_memory_use().peak;
  }
  result.device.timed_steps = timed_steps;
  std::tie(result.device.fp16_products, result.device.fp32_products) = model->products();
  if (timed_steps > 0) {
    result.device.compute_ms_per_step = compute_ms / static_cast<double>(timed_steps);
    result.device.after_backward_ms_per_step = after_backward_ms / static_cast<double>(timed_steps);
  }
  if (exchange_steps > 0) {
    result.device.exchange_ms_per_step = exchange_ms / static_cast<double>(exchange_steps);
  }
  result.wall_seconds = synchronized_now(*comm) - run_start;
  result.final_test_accuracy = result.epochs.empty() ? 0.0 : result.epochs.back().test_accuracy;
  result.stopped_by_time_budget = stop && !result.diverged;
  result.traffic_per_rank = gather_traffic(traffic.now(), *comm);
  result.node_of_rank = comm->node_of_rank();
  result.compression_per_rank =
      gather_compression(merged(compression_before, optimizer.compression_stats()), *comm);
  result.sync = merged(sync_before, optimizer.sync_stats());
  if (const amp::LossScaler* scaler = optimizer.loss_scaler()) {
    result.amp.enabled = true;
    result.amp.allow = amp.ops.ops_in(amp::OpList::kAllow);
    result.amp.deny = amp.ops.ops_in(amp::OpList::kDeny);
    result.amp.infer = amp.ops.ops_in(amp::OpList::kInfer);
    result.amp.gradient_wire = optimizer.gradient_wire();
    result.amp.dynamic = scaler->options().dynamic;
    result.amp.init_scale = scaler->options().init_scale;
    result.amp.final_scale = scaler->scale();
    result.amp.skipped_steps = scaler->skipped_steps();
    result.amp.scale_history = scaler->history();
  }
  if (const AutoDecision* d = optimizer.auto_decision()) result.auto_decision = *d;
  if (is_root) {
    result.final_parameters = model->parameters();
  }
  return result;
}

}  // namespace gw::trainer
