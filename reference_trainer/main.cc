// gradwire_train: the reference data-parallel trainer. Launch with mpirun; see --help.
//
// Order matters: the command line, the GRADWIRE_* configuration and the data set are all checked
// before MPI starts, so a bad input stops the program before anything is sent. An error on any
// rank, before MPI starts (Note [One verdict on the input]) or after
// (Note [Ending the job on an error]), ends every rank of the job, so no rank waits forever in
// MPI_Init or in a collective.
//
// Exit codes: 0 done; 1 a runtime error; 2 bad input (command line, GRADWIRE_* value, data file,
// output path, options that differ across ranks, a checkpoint that cannot be resumed); 3 the
// training diverged (a non-finite loss).
#include <cstdio>
#include <exception>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "kernels/stream.h"
#include "plugin/amp_settings.h"
#include "plugin/comm/counting_communicator.h"
#include "plugin/comm/mpi/mpi_runtime.h"
#include "plugin/comm/world_communicator.h"
#include "plugin/compressor_factory.h"
#include "plugin/config/params.h"
#include "plugin/config_check.h"
#include "plugin/sync_settings.h"
#include "reference_trainer/app/checkpoint.h"
#include "reference_trainer/app/checkpoint_files.h"
#include "reference_trainer/app/command_line.h"
#include "reference_trainer/app/config_summary.h"
#include "reference_trainer/app/output_file.h"
#include "reference_trainer/app/parameter_file.h"
#include "reference_trainer/app/report.h"
#include "reference_trainer/app/run_identity.h"
#include "reference_trainer/app/trainer.h"
#include "reference_trainer/app/training_model.h"
#include "reference_trainer/data/data_error.h"
#include "reference_trainer/data/sharder.h"

namespace {

constexpr char kProgram[] = "gradwire_train";
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;
constexpr int kExitDiverged = 3;

// --accumulation-steps N sets GRADWIRE_ACCUMULATION_STEPS (Note [Gradient accumulation]); given
// both, they must agree.
void set_accumulation_steps(int steps, gw::config::Config& config) {
  const char* key = gw::config::keys::kAccumulationSteps;
  if (config.source(key) == gw::config::Source::kEnvironment && config.get_int(key) != steps) {
    throw gw::config::ConfigError("--accumulation-steps " + std::to_string(steps) + " and " + key +
                                  "=" + config.text(key) +
                                  " differ; accepted: one of them, or both the same");
  }
  config.set(key, std::to_string(steps));
}

// The checks of this rank's input before MPI starts: the command line, the GRADWIRE_* values and
// their fit with the optimizer, the device, the data set. Fills the configuration and the data
// where they pass; an error is returned, not printed (Note [One verdict on the input]).
gw::InputVerdict check_input(const gw::trainer::TrainerOptions& options,
                             std::optional<gw::config::Config>* config,
                             std::optional<gw::trainer::FashionMnist>* data) {
  const auto refused = [](int code, const char* what, const std::exception& e) {
    return gw::InputVerdict{code, what, e.what()};
  };
  try {
    *config = gw::config::Config::from_environment();
    if (options.accumulation_steps > 0)
      set_accumulation_steps(options.accumulation_steps, **config);
    if (!options.output.print_config.empty()) return {};
    // Compressor, sync and mixed-precision settings and their fit with the optimizer (dgc needs
    // SGD).
    const auto probe = gw::trainer::make_optimizer(options);
    gw::check_compressor_supports(gw::read_compressor_settings(**config), *probe);
    gw::check_sync_supports(gw::read_sync_settings(**config), *probe);
    gw::read_amp_settings(**config);
    if (options.device == "cuda") gw::trainer::check_device_usable();
    *data = gw::trainer::load_fashion_mnist(options.data.dir, options.data.train_subset,
                                            options.data.test_subset);
  } catch (const gw::config::ConfigError& e) {
    return refused(kExitUsage, "configuration error", e);
  } catch (const gw::trainer::DataError& e) {
    return refused(kExitUsage, "data error", e);
  } catch (const std::invalid_argument& e) {
    return refused(kExitUsage, "invalid argument", e);
  } catch (const gw::trainer::DeviceError& e) {
    return refused(kExitUsage, "device error", e);
  } catch (const std::exception& e) {
    return refused(kExitFailure, "error", e);
  }
  return {};
}

// The output files this rank will write, checked before training (output_file.h).
void check_output_paths(const gw::trainer::TrainerOptions& options, int rank) {
  if (!options.checkpoint.path.empty()) {  // every rank writes its own
    gw::trainer::check_writable(gw::trainer::checkpoint_rank_path(options.checkpoint.path, rank),
                                "--checkpoint", /*rotated=*/true);
  }
  if (rank != 0) return;  // rank 0 writes the report and the parameters
  if (!options.output.report_path.empty())
    gw::trainer::check_writable(options.output.report_path, "--report");
  if (!options.output.save_params_path.empty()) {
    gw::trainer::check_writable(options.output.save_params_path, "--save-params");
  }
}

// Resuming: every rank's checkpoint of the newest step they all have, checked against this run
// (Note [Checkpoint generations], Note [Run identity]); any failure ends every rank, exit 2.
std::optional<gw::trainer::CheckpointGeneration> agree_resume(
    const gw::trainer::TrainerOptions& options, const gw::config::Config& config,
    const gw::trainer::FashionMnist& data, gw::Communicator& comm) {
  if (options.checkpoint.resume_path.empty()) return std::nullopt;
  gw::trainer::CheckpointGeneration resume = gw::trainer::agree_resume_point(
      comm, options.checkpoint.resume_path,
      gw::trainer::run_identity(options, config, comm.size(), data.train.size(), data.test.size()));
  gw::trainer::check_left_to_train(comm, options, resume.checkpoint);
  if (comm.rank() == 0) {
    std::printf("resuming from %s: step %lld (epoch %lld, step %llu of it)\n", resume.path.c_str(),
                static_cast<long long>(resume.checkpoint.steps),
                static_cast<long long>(resume.checkpoint.epoch),
                static_cast<unsigned long long>(resume.checkpoint.step_in_epoch));
  }
  return resume;
}

// See Note [The configuration at the start of a run].
void print_configuration(const gw::config::Config& config, const gw::Communicator& comm,
                         const gw::BackendChoice& backend, const gw::MpiInfo& mpi_info) {
  const std::string& log_level = config.get_string(gw::config::keys::kLogLevel);
  if (comm.rank() != 0 || log_level == "error" || log_level == "warn") return;
  const std::string configuration = log_level == "debug"
                                        ? gw::trainer::config_full_table(config, comm.size())
                                        : gw::trainer::config_summary_line(config, comm.size());
  std::printf("%s", configuration.c_str());
  std::printf("backend: %s\n", backend.reason.c_str());
  std::printf("exchange: %s\n", backend.hierarchy.reason.c_str());
  std::printf("MPI: %s; collectives wait by %s\n", mpi_info.library.c_str(),
              mpi_info.wait_reason.c_str());
}

// Rank 0's report, summary and parameters.
void write_outputs(const gw::trainer::TrainerOptions& options, const gw::config::Config& config,
                   const gw::trainer::TrainResult& result, const gw::BackendChoice& backend,
                   const gw::MpiInfo& mpi_info) {
  auto report = gw::trainer::make_report(options, config, result);
  report["topology"] = {{"hierarchical", backend.hierarchy.enabled},
                        {"nodes", backend.hierarchy.nodes},
                        {"ranks_per_node", backend.hierarchy.local_size},
                        {"nodes_from", backend.hierarchy.source},
                        {"reason", backend.hierarchy.reason}};
  report["mpi"] = {{"library", mpi_info.library},
                   {"wait", mpi_info.wait},
                   {"wait_reason", mpi_info.wait_reason}};
  std::printf("%s", gw::trainer::summary_text(report).c_str());
  if (!options.output.report_path.empty()) {
    gw::trainer::write_report(report, options.output.report_path);
    std::printf("report written to %s\n", options.output.report_path.c_str());
  }
  if (!options.output.save_params_path.empty()) {
    gw::trainer::save_parameters(result.final_parameters, options.output.save_params_path);
  }
  std::fflush(stdout);
}

// The same options and data on every rank: a run too small for one global batch (EpochSharder's
// rule) fails alike on every rank, said once, without an abort.
void check_fills_one_global_batch(const gw::trainer::TrainerOptions& options,
                                  const gw::trainer::FashionMnist& data, int world_size,
                                  int passes) {
  if (gw::trainer::EpochSharder::fills_one_global_batch(data.train.size(), world_size,
                                                        options.batch_size, passes)) {
    return;
  }
  const std::size_t global =
      options.batch_size * static_cast<std::size_t>(world_size) * static_cast<std::size_t>(passes);
  throw gw::config::ConfigError(
      "--train-subset: " + std::to_string(data.train.size()) +
          " training samples do not fill one global batch (--batch-size " +
          std::to_string(options.batch_size) + " x " + std::to_string(world_size) + " ranks" +
          (passes > 1 ? " x " + std::to_string(passes) + " backward passes" : std::string()) +
          " = " + std::to_string(global) + " samples); accepted: 0 (all) or at least " +
          std::to_string(global),
      gw::config::ConfigError::SameOnEveryRank{});
}

// Everything after MPI starts; run_mpi_main ends the job on whatever this throws.
int run(const gw::trainer::TrainerOptions& options, const gw::config::Config& config,
        const gw::trainer::FashionMnist& data) {
  // On the CPU the gradients live in host memory, so GRADWIRE_BACKEND=auto means MPI and nccl is a
  // configuration error on every rank, before any collective (Note [Choosing the backend]). On a
  // GPU (Note [The trainer on a device]) auto takes NCCL when every rank has a GPU of its own.
  gw::BackendChoice backend;
  const bool on_gpu = options.device == "cuda";
  // Collective: every rank asks, whatever its --device, so that a rank with another --device
  // reaches the agreement check below instead of a mismatched collective.
  const int local_device = gw::default_cuda_device();
  const int cuda_device = on_gpu ? local_device : -1;
  const gw::kernels::Stream stream =
      on_gpu ? gw::kernels::Stream::cuda(cuda_device) : gw::kernels::Stream::host();
  std::unique_ptr<gw::Communicator> world = gw::make_world_communicator(
      config, on_gpu ? gw::Device::kCuda : gw::Device::kHost, cuda_device, &backend);
  // Under NCCL (a GPU each) MPI carries only control messages, and the collectives wait on NCCL's
  // stream, not by GRADWIRE_MPI_WAIT.
  gw::MpiInfo mpi_info;
  if (backend.backend == gw::Backend::kNccl) {
    mpi_info = {gw::mpi_library_version(), "nccl",
                "the gradient collectives run on NCCL's stream; MPI carries control messages only"};
  } else {
    mpi_info = gw::mpi_info(*world);
  }
  auto comm = std::make_shared<gw::CountingCommunicator>(std::move(world));
  // Every rank must train the same run (Note [Options that must agree across ranks]), and every
  // rank must be able to write what it will write, before the first step.
  gw::check_same_on_all_ranks(*comm, gw::trainer::agreed_options_canonical(options));
  check_fills_one_global_batch(
      options, data, comm->size(),
      static_cast<int>(config.get_int(gw::config::keys::kAccumulationSteps)));
  gw::trainer::TrainerOptions run_options = options;
  gw::agree_on_startup_errors(*comm, [&] {
    check_output_paths(options, comm->rank());
    run_options.faults = gw::trainer::injected_faults_from_environment(comm->size());
  });
  const std::optional<gw::trainer::CheckpointGeneration> resume =
      agree_resume(options, config, data, *comm);
  print_configuration(config, *comm, backend, mpi_info);
  if (resume && !options.checkpoint.path.empty()) {  // Note [Checkpoint generations]
    run_options.checkpoint.first_write_keeps_previous =
        resume->path == gw::trainer::previous_generation(gw::trainer::checkpoint_rank_path(
                            options.checkpoint.path, comm->rank()));
  }
  std::optional<gw::trainer::TrainResult> trained;
  try {
    trained = gw::trainer::train(run_options, config, data, comm,
                                 resume ? &resume->checkpoint : nullptr, stream);
  } catch (const gw::trainer::CheckpointWriteFailed& e) {
    // A checkpoint inside the run failed, on every rank together (write_checkpoint's agreement):
    // the job ends through MPI_Finalize, without an abort, each rank whose own write failed
    // saying why (Note [Ending the job on an error]).
    if (e.here()) gw::MpiRuntime::print_error(kProgram, "checkpoint", e.what());
    return kExitFailure;
  }
  const gw::trainer::TrainResult& result = *trained;
  if (comm->rank() == 0) write_outputs(options, config, result, backend, mpi_info);
  if (result.diverged) {
    // Every rank saw the same vote (Note [Diverged runs]) and stops here with the same code.
    if (comm->rank() == 0)
      gw::MpiRuntime::print_error(kProgram, "diverged", result.diverged->message);
    return kExitDiverged;
  }
  // After the outputs (Note [A failed final checkpoint]).
  if (const gw::trainer::CheckpointResult& ck = result.checkpoints; !ck.final_error.empty()) {
    if (ck.final_error_here) {
      gw::MpiRuntime::print_error(kProgram, "checkpoint", ck.final_error);
    }
    return kExitFailure;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int exit_code = 0;
  std::string usage_error;
  const auto options = gw::trainer::parse_command_line(argc, argv, &exit_code, &usage_error);
  if (!options && exit_code == 0) return 0;  // --help
  std::optional<gw::config::Config> config;
  std::optional<gw::trainer::FashionMnist> data;
  const gw::InputVerdict verdict = options ? check_input(*options, &config, &data)
                                           : gw::InputVerdict{exit_code, "usage", usage_error};
  if (verdict.exit_code == 0 && !options->output.print_config.empty()) {
    std::cout << (options->output.print_config == "markdown"
                      ? gw::config::markdown_table(config->registry())
                      : config->table());
    return 0;
  }
  // On its own, a rank that failed says why and stops; under a launcher, every rank starts MPI and
  // the ranks agree on a verdict first (Note [One verdict on the input]).
  if (verdict.exit_code != 0 && !gw::MpiRuntime::launched_with_peers()) {
    gw::MpiRuntime::print_error(kProgram, verdict.what.c_str(), verdict.message);
    return verdict.exit_code;
  }
  return gw::run_mpi_main(&argc, &argv, kProgram, [&] {
    if (const int code = gw::agree_on_input(kProgram, verdict)) return code;
    return run(*options, *config, *data);
  });
}
