#include "reference_trainer/app/command_line.h"

#include <CLI/CLI.hpp>

namespace gw::trainer {

std::optional<TrainerOptions> parse_command_line(int argc, char** argv, int* exit_code) {
  TrainerOptions o;
  CLI::App app{
      "gradwire_train: the reference data-parallel trainer (Fashion-MNIST) on gradwire.\n"
      "Launch with mpirun; GRADWIRE_* environment variables select the strategies\n"
      "(--print-config lists them)."};
  app.add_option("--model", o.model, "Model to train")
      ->check(CLI::IsMember({"mlp", "cnn"}))
      ->capture_default_str();
  app.add_option("--optimizer", o.optimizer, "Inner optimizer that gradwire wraps")
      ->check(CLI::IsMember({"sgd", "adam"}))
      ->capture_default_str();
  app.add_option("--epochs", o.epochs, "Passes over the training set")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--batch-size", o.batch_size, "Samples per rank per step")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20))
      ->capture_default_str();
  app.add_option("--lr", o.lr, "Learning rate")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--momentum", o.momentum, "SGD momentum")
      ->check(CLI::Range(0.0, 0.999999))
      ->capture_default_str();
  app.add_flag("--nesterov", o.nesterov, "Nesterov momentum (sgd)");
  app.add_option("--weight-decay", o.weight_decay, "L2 weight decay")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--seed", o.seed, "Seed of initialisation and shuffling")->capture_default_str();
  app.add_option("--max-steps", o.max_steps, "Stop after this many steps (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--eval-every", o.eval_every,
                 "Also evaluate every N steps, into the report's history (0: at epoch ends only)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--time-budget", o.time_budget,
                 "Stop at the first evaluation after this many seconds of training (0: no "
                 "limit; evaluation time is not counted)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--train-subset", o.train_subset,
                 "Train on the first N training samples only (0: all)")
      ->capture_default_str();
  app.add_option("--test-subset", o.test_subset, "Evaluate on the first N test samples (0: all)")
      ->capture_default_str();
  app.add_option("--data-dir", o.data_dir, "Folder of the Fashion-MNIST IDX files (.gz or plain)")
      ->capture_default_str();
  app.add_option("--report", o.report_path, "Write a JSON report here (rank 0)");
  app.add_option("--save-params", o.save_params_path,
                 "Write the final parameters here (rank 0; float32, for comparisons)");
  app.add_option("--print-config", o.print_config,
                 "Print every GRADWIRE_* parameter with its value and source, then exit")
      ->expected(0, 1)
      ->default_str("table")
      ->check(CLI::IsMember({"table", "markdown"}));
  bool no_progress = false;
  app.add_flag("--no-progress", no_progress, "No live progress bar");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    *exit_code = app.exit(e);
    return std::nullopt;
  }
  if (app.count("--print-config") > 0 && o.print_config.empty()) o.print_config = "table";
  if (o.nesterov && o.momentum == 0.0) {
    std::fprintf(stderr, "--nesterov needs --momentum greater than 0\n");
    *exit_code = 2;
    return std::nullopt;
  }
  o.progress = !no_progress;
  return o;
}

}  // namespace gw::trainer
