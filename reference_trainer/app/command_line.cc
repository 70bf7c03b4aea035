#include "reference_trainer/app/command_line.h"

#include <charconv>
#include <cstdio>
#include <utility>

#include "cli/cli.h"

namespace gw::trainer {
namespace {

constexpr int kExitUsage = 2;

// The shortest text that reads back as exactly `v`.
std::string exact(double v) {
  char buf[40];
  const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  return std::string(buf, end);
}

// The model and how it learns.
void add_training_options(gw::cli::Parser& app, TrainerOptions& o) {
  app.add("--model", o.model, "Model to train").one_of({"mlp", "mlp-small", "cnn"}).show_default();
  app.add("--device", o.device,
          "Where each rank trains: cpu, or cuda (a GPU per rank: the local rank modulo the "
          "GPUs CUDA_VISIBLE_DEVICES leaves; ranks may share one)")
      .one_of({"cpu", "cuda"})
      .show_default();
  app.add("--optimizer", o.optimizer, "Inner optimizer that gradwire wraps")
      .one_of({"sgd", "adam"})
      .show_default();
  app.add("--epochs", o.schedule.epochs, "Passes over the training set")
      .range(1, 100000)
      .show_default();
  app.add("--batch-size", o.batch_size, "Samples per rank per step (per backward pass)")
      .range(std::size_t{1}, std::size_t{1} << 20)
      .show_default();
  app.add("--accumulation-steps", o.accumulation_steps,
          "Backward passes per step, their gradients summed locally and exchanged once (sets "
          "GRADWIRE_ACCUMULATION_STEPS; 0: its value, 1 by default)")
      .range(0, 1000000)
      .show_default();
  app.add("--lr", o.lr, "Learning rate").finite().positive().show_default();
  app.add("--momentum", o.momentum, "SGD momentum").finite().range(0.0, 0.999999).show_default();
  app.add_flag("--nesterov", o.nesterov, "Nesterov momentum (sgd)");
  app.add("--weight-decay", o.weight_decay, "L2 weight decay")
      .finite()
      .non_negative()
      .show_default();
  app.add("--seed", o.seed, "Seed of initialisation and shuffling").show_default();
}

// When the run stops and evaluates, and on what data.
void add_schedule_and_data_options(gw::cli::Parser& app, TrainerOptions& o) {
  app.add("--max-steps", o.schedule.max_steps, "Stop after this many steps (0: no limit)")
      .non_negative()
      .show_default();
  app.add("--eval-every", o.schedule.eval_every,
          "Also evaluate every N steps, into the report's history (0: at epoch ends only)")
      .non_negative()
      .show_default();
  app.add("--time-budget", o.schedule.time_budget,
          "Stop at the first evaluation after this many seconds of training (0: no "
          "limit; evaluation time is not counted)")
      .finite()
      .non_negative()
      .show_default();
  app.add("--train-subset", o.data.train_subset,
          "Train on the first N training samples only (0: all)")
      .show_default();
  app.add("--test-subset", o.data.test_subset, "Evaluate on the first N test samples (0: all)")
      .show_default();
  app.add("--data-dir", o.data.dir, "Folder of the Fashion-MNIST IDX files (.gz or plain)")
      .non_empty()
      .show_default();
}

// The files the run writes and reads back.
void add_file_options(gw::cli::Parser& app, TrainerOptions& o) {
  app.add("--report", o.output.report_path, "Write a JSON report here (rank 0)").non_empty();
  app.add("--save-params", o.output.save_params_path,
          "Write the final parameters here (rank 0; float32, for comparisons)")
      .non_empty();
  app.add("--checkpoint", o.checkpoint.path,
          "Write a checkpoint here every --checkpoint-every steps and at the end of the "
          "run, one file per rank ({rank} in the path is replaced by the rank, else "
          ".rank<r> is appended); the one before is kept as <file>.prev "
          "(docs/CHECKPOINT.md)")
      .non_empty();
  app.add("--checkpoint-every", o.checkpoint.every,
          "Also write the checkpoint every N steps (0: at the end of the run only)")
      .non_negative()
      .show_default();
  app.add("--resume", o.checkpoint.resume_path,
          "Continue the run checkpointed at this path (named as for --checkpoint) from "
          "the newest step every rank has; only --epochs, --max-steps, --time-budget, "
          "--eval-every, --checkpoint-every and the paths may differ from that run")
      .non_empty();
}

// What rank 0 prints. `no_progress`: --no-progress.
void add_print_options(gw::cli::Parser& app, TrainerOptions& o, bool* no_progress) {
  app.add("--print-config", o.output.print_config,
          "Print every GRADWIRE_* parameter with its value and source, then exit")
      .value_optional("table")
      .one_of({"table", "markdown"});
  app.add_flag("--no-progress", *no_progress,
               "No progress on stderr: neither the live bar nor the --progress-every lines");
  app.add("--progress-every", o.output.progress_every,
          "When stderr is not a terminal, a plain progress line on it at most every this "
          "many seconds, instead of the live bar (0: none; the evaluation and epoch lines "
          "remain)")
      .finite()
      .non_negative()
      .show_default();
}

// The combinations CLI11 cannot check: an error message on stderr, or "".
std::string combination_error(const TrainerOptions& o) {
  if (o.nesterov && o.momentum == 0.0) return "--nesterov needs --momentum greater than 0";
  if (o.checkpoint.every > 0 && o.checkpoint.path.empty()) {
    return "--checkpoint-every needs --checkpoint PATH";
  }
  return "";
}

}  // namespace

std::optional<TrainerOptions> parse_command_line(int argc, char** argv, int* exit_code,
                                                 std::string* error) {
  TrainerOptions o;
  gw::cli::Parser app{
      "gradwire_train: the reference data-parallel trainer (Fashion-MNIST) on gradwire.\n"
      "Launch with mpirun; GRADWIRE_* environment variables select the strategies\n"
      "(--print-config lists them)."};
  bool no_progress = false;
  add_training_options(app, o);
  add_schedule_and_data_options(app, o);
  add_file_options(app, o);
  add_print_options(app, o, &no_progress);
  if (const auto code = app.parse(argc, argv, error)) {
    // --help is 0; every bad command line is 2, as every other bad input (CLI11's own codes
    // differ by kind of mistake).
    *exit_code = *code == 0 ? 0 : kExitUsage;
    return std::nullopt;
  }
  if (app.count("--print-config") > 0 && o.output.print_config.empty()) {
    o.output.print_config = "table";
  }
  if (std::string combination = combination_error(o); !combination.empty()) {
    if (error != nullptr) {
      *error = std::move(combination);
    } else {
      std::fprintf(stderr, "%s\n", combination.c_str());
    }
    *exit_code = kExitUsage;
    return std::nullopt;
  }
  o.output.progress = !no_progress;
  return o;
}

std::string agreed_options_canonical(const TrainerOptions& o) {
  // Note [Options that must agree across ranks]
  // Every option that shapes the run's collectives or its result: a rank with another model,
  // batch size, data subset or step limit would issue other collectives (a hang), and one with
  // another learning rate or seed would train silently apart. The paths (data, report, saved
  // parameters, checkpoints) may differ per rank, but whether a rank writes checkpoints or
  // resumes must not (both are collective); --no-progress and --progress-every only print. A
  // resumed run must also match the run it continues, in all of these but a few
  // (Note [Run identity]).
  std::string out;
  const auto line = [&out](const char* key, const std::string& value) {
    out += std::string(key) + "=" + value + "\n";
  };
  line("--model", o.model);
  line("--optimizer", o.optimizer);
  // Named only when not the default, so that the CPU runs' text (and the identity of their
  // checkpoints, written before there was a --device) stays what it was.
  if (o.device != "cpu") line("--device", o.device);
  line("--epochs", std::to_string(o.schedule.epochs));
  line("--batch-size", std::to_string(o.batch_size));
  line("--lr", exact(o.lr));
  line("--momentum", exact(o.momentum));
  line("--nesterov", o.nesterov ? "true" : "false");
  line("--weight-decay", exact(o.weight_decay));
  line("--seed", std::to_string(o.seed));
  line("--max-steps", std::to_string(o.schedule.max_steps));
  line("--eval-every", std::to_string(o.schedule.eval_every));
  line("--time-budget", exact(o.schedule.time_budget));
  line("--train-subset", std::to_string(o.data.train_subset));
  line("--test-subset", std::to_string(o.data.test_subset));
  line("--checkpoint", o.checkpoint.path.empty() ? "off" : "on");
  line("--checkpoint-every", std::to_string(o.checkpoint.every));
  line("--resume", o.checkpoint.resume_path.empty() ? "off" : "on");
  return out;
}

}  // namespace gw::trainer
