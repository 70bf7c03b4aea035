// One run of gradwire_train on every rank, its methods in the order the run takes them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/stream.h"
#include "plugin/comm/counting_communicator.h"
#include "plugin/config/config.h"
#include "plugin/distributed_optimizer.h"
#include "reference_trainer/app/checkpoint_schedule.h"
#include "reference_trainer/app/divergence_vote.h"
#include "reference_trainer/app/progress.h"
#include "reference_trainer/app/run_schedule.h"
#include "reference_trainer/app/run_stats.h"
#include "reference_trainer/app/run_traffic.h"
#include "reference_trainer/app/step_timer.h"
#include "reference_trainer/app/train_result.h"
#include "reference_trainer/app/trainer_options.h"
#include "reference_trainer/app/training_clock.h"
#include "reference_trainer/app/training_model.h"
#include "reference_trainer/data/fashion_mnist.h"
#include "reference_trainer/data/sharder.h"

namespace gw::trainer {

struct Checkpoint;  // checkpoint.h
struct Evaluation;  // evaluation.h

// A run reads: set up (the constructor), resume (from a checkpoint, or not), start the clock,
// then epoch after epoch its steps, with an evaluation every --eval-every steps and at the
// epoch's end and a checkpoint where one is due (Note [When a checkpoint is taken]), until the
// epochs, --max-steps, --time-budget or a diverged loss (Note [Diverged runs]) stop it; finish()
// gathers the figures. train() (trainer.h) is that sequence. Every method is collective: each rank
// takes the same steps in the same order.
class TrainingRun {
 public:
  // The model and its optimizer where `stream` works (Note [The trainer on a device]), this
  // rank's shard of the data; prints the run's first line (rank 0). `options` and `data` must
  // outlive the run.
  TrainingRun(const TrainerOptions& options, const config::Config& config, const FashionMnist& data,
              std::shared_ptr<CountingCommunicator> comm, const kernels::Stream& stream);
  TrainingRun(const TrainingRun&) = delete;
  TrainingRun& operator=(const TrainingRun&) = delete;

  // Puts the model and the optimizer back as `checkpoint` has them (a failure on any rank stops
  // every rank, exit code 2) and continues its figures (Note [Checkpoint figures]).
  void resume(const Checkpoint& checkpoint);
  // Starts the run's wall clock; before the first epoch.
  void start();
  // Whether another epoch is to train: epochs left, no step limit reached, nothing stopped it.
  bool more_epochs() const;
  // The next epoch, or the rest of a resumed one.
  void train_epoch();
  // The run's figures, every rank's gathered (rank 0's parameters included on rank 0).
  TrainResult finish();

 private:
  // The epoch in progress: its position, its figures so far and its training clock.
  struct EpochProgress {
    int number = 1;
    std::size_t steps_done = 0;
    double loss_sum = 0;                           // this rank's training losses
    std::optional<TrafficCounters> traffic_start;  // taken by begin_epoch() unless resumed
    double trained_before = 0, wall_before = 0;    // a resumed epoch's seconds before this process
    std::optional<TrainingClock> clock;            // runs from begin_epoch()
  };

  void begin_epoch();
  // One step: the batch, forward and backward, the exchange and the update, and the ranks' vote
  // on a non-finite loss. Returns false when the run diverged.
  bool step();
  // After this process's first step that updated the parameters: room for this rank's checkpoint
  // and rank 0's parameters file (Note [Room for what a run writes]); a failure on any rank stops
  // every rank, exit 2.
  void check_room_for_outputs();
  // An evaluation inside the epoch (--eval-every). Returns false when rank 0 voted to stop.
  bool evaluate_inside_epoch();
  // A checkpoint inside the epoch, with the training clock paused around it; `last`: where the
  // run ends (Note [A failed final checkpoint]).
  void checkpoint_inside_epoch(bool last = false);
  // After the epoch's last step (or the run's): the averaging, its evaluation, its figures and
  // its line, and the checkpoint due at its end.
  void end_epoch();
  EpochResult epoch_result(const Evaluation& eval, double loss_mean, double epoch_end) const;
  void record_evaluation(const Evaluation& eval, double trained, double now);
  // Writes this rank's checkpoint at synchronized time `now` (Note [When a checkpoint is taken]).
  void save_checkpoint(double now);
  // The checkpoint where the run ends (Note [A failed final checkpoint]): a failure every rank
  // agreed on is recorded, not thrown.
  void save_final_checkpoint(double now);
  // What that checkpoint holds.
  Checkpoint checkpoint_at(double now) const;
  // Whether the ranks hold the same parameters after every step (synchronous SGD), so that an
  // evaluation needs no average (Note [Evaluation points]).
  bool ranks_in_step() const;
  bool reached_max_steps() const { return schedule_.reached_max_steps(result_.steps); }
  void report_device();
  void report_amp();

  const TrainerOptions& options_;
  const FashionMnist& data_;
  std::shared_ptr<CountingCommunicator> comm_;
  std::unique_ptr<TrainingModel> model_;
  DistributedOptimizer optimizer_;
  EpochSharder sharder_;
  std::string identity_;  // what its checkpoints must match (Note [Run identity])
  RunSchedule schedule_;
  CheckpointSchedule checkpoints_;
  TrainResult result_;
  RunTraffic traffic_;
  RunStats stats_;
  StepTimer timer_;
  ProgressOutput progress_;
  std::vector<std::size_t> indices_;  // the step's batch
  EpochProgress epoch_;
  bool room_checked_ = false;  // check_room_for_outputs() ran
  struct Wall {
    double run_start = 0;  // synchronized wall time the run started (earlier, when resumed)
    double before = 0;     // a resumed run's wall seconds before this process
  } wall_;
  bool stop_ = false;
  DivergenceVote vote_;  // Note [Diverged runs]
};

}  // namespace gw::trainer
