// What a run of gradwire_train found: its epochs, evaluations, traffic, device times and the
// rest of what its report (report.h) and its checkpoints (checkpoint.h) carry.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plugin/comm/counting_communicator.h"
#include "plugin/distributed_optimizer.h"

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

// A non-finite training loss on some rank, outside mixed precision's skipped steps, stopped the
// run (Note [Diverged runs]); the same on every rank.
struct Divergence {
  std::int64_t after_steps = 0;
  std::string message;
};

// Checkpoints (docs/CHECKPOINT.md): the step this run resumed from (-1: a new run), and the
// checkpoints this process wrote and the step of the last one (-1: none); the run's final
// checkpoint's failure (empty: none; Note [A failed final checkpoint]), and whether this rank's
// own write failed.
struct CheckpointResult {
  std::int64_t resumed_from_step = -1;
  std::int64_t written = 0;
  std::int64_t last_step = -1;
  std::string final_error;
  bool final_error_here = false;
};

// What the ranks counted, gathered at the end: index = rank.
struct PerRankResult {
  std::vector<TrafficCounters> traffic;
  std::vector<int> node_of_rank;  // the communicator's nodes (empty: a node per rank)
  std::vector<CompressionStats> compression;
};

struct TrainResult {
  int world_size = 1;
  int accumulation_steps = 1;  // backward passes per step (Note [Gradient accumulation])
  std::int64_t steps = 0;
  std::size_t parameters = 0;
  std::string model_description;
  std::vector<EpochResult> epochs;
  std::vector<EvalPoint> history;  // every evaluation, in order
  bool stopped_by_time_budget = false;
  std::optional<Divergence> diverged;  // the run stopped after `after_steps` steps
  double final_test_accuracy = 0;
  double wall_seconds = 0;    // rank 0, from before the first step to after the last eval
  double train_seconds = 0;   // sum of the epochs' training time
  std::uint64_t samples = 0;  // training samples processed by all ranks
  PerRankResult per_rank;
  SyncStats sync;  // the same on every rank
  AmpResult amp;
  DeviceResult device;
  std::vector<float> final_parameters;  // rank 0's, in registration order
  CheckpointResult checkpoints;
  // GRADWIRE_COMPRESSOR=auto's measurements and choice (the same on every rank); empty otherwise.
  std::optional<AutoDecision> auto_decision;
};

}  // namespace gw::trainer
