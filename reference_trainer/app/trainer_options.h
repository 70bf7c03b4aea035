// What gradwire_train was asked to do: its command line, parsed (command_line.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "reference_trainer/app/injected_faults.h"

namespace gw::trainer {

// The data set, and how much of it a run uses.
struct DataOptions {
  std::string dir = "/usr/share/datasets/fashion-mnist";
  std::size_t train_subset = 0;  // 0: the whole training set
  std::size_t test_subset = 0;   // 0: the whole test set
};

// How long the run trains and when it evaluates.
struct ScheduleOptions {
  int epochs = 3;
  std::int64_t max_steps = 0;   // 0: no limit
  std::int64_t eval_every = 0;  // also evaluate every this many steps (0: at epoch ends only)
  double time_budget = 0;       // stop once training (evaluation excluded) took this many s
};

// What rank 0 writes and prints besides the evaluation and epoch lines.
struct OutputOptions {
  std::string report_path;       // empty: no JSON report
  std::string save_params_path;  // empty: do not save final parameters
  std::string print_config;      // "", "table" or "markdown"
  bool progress = true;          // rank 0 shows progress (Note [Progress in terminals and logs])
  double progress_every = 30;    // when stderr is no terminal: a progress line every this many s
};

// Checkpoints (docs/CHECKPOINT.md), per-rank paths (checkpoint_files.h, checkpoint_rank_path).
struct CheckpointOptions {
  std::string path;         // empty: no checkpoints
  std::int64_t every = 0;   // also every this many steps (0: at the end of the run only)
  std::string resume_path;  // empty: start a new run
  // Set by gradwire_train after the resume agreement: this rank resumed from the .prev of its own
  // --checkpoint file, whose current file holds a step not every rank has; the first write
  // replaces that file and keeps .prev (Note [Checkpoint generations]).
  bool first_write_keeps_previous = false;
};

struct TrainerOptions {
  std::string model = "mlp";      // mlp | cnn
  std::string optimizer = "sgd";  // sgd | adam
  std::string device = "cpu";     // cpu | cuda (Note [The trainer on a device])
  std::size_t batch_size = 32;    // per rank and backward pass
  // Backward passes per step (gradient accumulation); 0: GRADWIRE_ACCUMULATION_STEPS's value,
  // which --accumulation-steps sets (Note [Gradient accumulation]).
  int accumulation_steps = 0;
  double lr = 0.05;
  double momentum = 0.9;
  bool nesterov = false;
  double weight_decay = 0.0;
  std::uint64_t seed = 42;
  DataOptions data;
  ScheduleOptions schedule;
  OutputOptions output;
  CheckpointOptions checkpoint;
  // Set by gradwire_train from GW_TEST_FAULT, never from the command line
  // (Note [Faults the suite injects]).
  std::vector<InjectedFault> faults;
};

}  // namespace gw::trainer
