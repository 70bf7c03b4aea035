// The reference data-parallel training run: a model, its optimizer wrapped in gradwire's
// DistributedOptimizer, per-rank shards of Fashion-MNIST, evaluation, and the run's figures.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/stream.h"
#include "plugin/comm/counting_communicator.h"
#include "plugin/config/config.h"
#include "plugin/distributed_optimizer.h"
#include "reference_trainer/app/trainer_options.h"
#include "reference_trainer/data/fashion_mnist.h"

namespace gw::trainer {

struct EpochResult {
  int epoch = 0;
  double loss = 0;  // mean training loss over the epoch's steps, averaged over ranks
  double test_accuracy = 0;
  double test_loss = 0;
  double wall_seconds = 0;                 // training and evaluation of this epoch
  double train_seconds = 0;                // training only
  std::uint64_t samples = 0;               // training samples processed by all ranks this epoch
  std::uint64_t gradient_bytes_sent = 0;   // this rank (rank 0), this epoch
  std::uint64_t parameter_bytes_sent = 0;  // likewise (local SGD's averaging)
};

// One evaluation of the test set, inside an epoch (--eval-every) or at its end. Under local SGD
// the evaluated model is the ranks' average (Note [Evaluation points]).
struct EvalPoint {
  std::int64_t step = 0;     // steps done before it
  double epoch = 0;          // step / steps per epoch
  double train_seconds = 0;  // training time before it, evaluation excluded (rank 0, synchronized)
  double wall_seconds = 0;   // wall time since the run started, evaluation included
  double test_accuracy = 0;
  double test_loss = 0;
  std::uint64_t gradient_bytes_sent = 0;   // rank 0, since the run started
  std::uint64_t parameter_bytes_sent = 0;  // likewise
};

// What mixed precision did (GRADWIRE_AMP=1); the same on every rank.
struct AmpResult {
  bool enabled = false;
  std::vector<std::string> allow, deny, infer;  // the op lists in force
  std::string gradient_wire;                    // fp32, fp16 or sparse
  bool dynamic = true;
  float init_scale = 1;
  float final_scale = 1;
  std::int64_t skipped_steps = 0;
  std::vector<amp::ScaleChange> scale_history;  // [0] the initial scale, then each change
};

// Where rank 0 trained, and how its steps' time split (Note [The trainer on a device]). The times
// are the model's stream's: CUDA events on a GPU, the host clock on the CPU.
struct DeviceResult {
  std::string kind = "cpu";             // cpu | cuda
  std::string name;                     // the GPU's (cuda)
  std::uint64_t peak_memory_bytes = 0;  // CUDA memory held in gradwire's buffers at most (cuda)
  std::int64_t timed_steps = 0;
  double compute_ms_per_step = 0;  // forward and backward, batch gather included
  // From the end of backward to the end of the step: the exchange the backward did not hide,
  // then the inner optimizer's update.
  double after_backward_ms_per_step = 0;
  // From the first bucket's exchange start to the last one's end on the communication stream
  // (DistributedOptimizer::last_exchange_ms), overlapping backward where it can; local steps
  // count 0.
  double exchange_ms_per_step = 0;
  // The model's matrix products (GEMMs, convolution passes) with fp16 and with fp32 operands over
  // this process's steps and evaluations (cuda; mixed precision moves the allow-listed ones).
  std::int64_t fp16_products = 0, fp32_products = 0;
};

struct TrainResult {
  int world_size = 1;
  std::int64_t steps = 0;
  std::size_t parameters = 0;
  std::string model_description;
  std::vector<EpochResult> epochs;
  std::vector<EvalPoint> history;  // every evaluation, in order
  bool stopped_by_time_budget = false;
  // A non-finite training loss on some rank, outside mixed precision's skipped steps, stopped
  // the run after `diverged_step` steps (Note [Diverged runs]); the same on every rank.
  bool diverged = false;
  std::int64_t diverged_step = 0;
  std::string diverged_message;
  double final_test_accuracy = 0;
  double wall_seconds = 0;    // rank 0, from before the first step to after the last eval
  double train_seconds = 0;   // sum of the epochs' training time
  std::uint64_t samples = 0;  // training samples processed by all ranks
  std::vector<TrafficCounters> traffic_per_rank;  // gathered at the end, index = rank
  std::vector<int> node_of_rank;  // the communicator's nodes (empty: a node per rank)
  std::vector<CompressionStats> compression_per_rank;  // likewise
  SyncStats sync;                                      // the same on every rank
  AmpResult amp;
  DeviceResult device;
  std::vector<float> final_parameters;  // rank 0's, in registration order
  // Checkpoints (docs/CHECKPOINT.md): the step this run resumed from (-1: a new run), and the
  // checkpoints this process wrote and the step of the last one (-1: none).
  std::int64_t resumed_from_step = -1;
  std::int64_t checkpoints_written = 0;
  std::int64_t last_checkpoint_step = -1;
  // GRADWIRE_COMPRESSOR=auto's measurements and choice (the same on every rank); empty otherwise.
  std::optional<AutoDecision> auto_decision;
};

struct Checkpoint;  // checkpoint.h

// The inner optimizer the options name (sgd or adam), before gradwire wraps it, working where
// `stream` works.
std::unique_ptr<Optimizer> make_optimizer(const TrainerOptions& options,
                                          const kernels::Stream& stream = kernels::Stream::host());

// Runs the whole training on every rank of `comm`, or the rest of it from `resume`, this rank's
// checkpoint of the step the ranks agreed on (checkpoint_files.h, agree_resume_point). Writes
// checkpoints as options.checkpoint_path and checkpoint_every say. The model, its data and the
// optimizer live where `stream` works (Note [The trainer on a device]). Collective.
TrainResult train(const TrainerOptions& options, const config::Config& config,
                  const FashionMnist& data, std::shared_ptr<CountingCommunicator> comm,
                  const Checkpoint* resume = nullptr,
                  const kernels::Stream& stream = kernels::Stream::host());

}  // namespace gw::trainer
