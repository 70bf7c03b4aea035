#include "reference_trainer/app/report.h"

#include <cstddef>

#include "reference_trainer/app/output_file.h"
#include "reference_trainer/app/report_sections.h"

namespace gw::trainer {
namespace {

// Every GRADWIRE_* value in force, and where each came from.
nlohmann::json config_json(const config::Config& config, nlohmann::json* sources) {
  nlohmann::json cfg = nlohmann::json::object();
  *sources = nlohmann::json::object();
  for (const auto& p : config.registry().params()) {
    cfg[p.key] = config.text(p.key);
    (*sources)[p.key] = to_string(config.source(p.key));
  }
  return cfg;
}

nlohmann::json epochs_json(const std::vector<EpochResult>& epochs) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& e : epochs) {
    out.push_back({{"epoch", e.epoch},
                   {"loss", e.loss},
                   {"test_accuracy", e.test_accuracy},
                   {"test_loss", e.test_loss},
                   {"wall_seconds", e.wall_seconds},
                   {"train_seconds", e.train_seconds},
                   {"samples", e.samples},
                   {"gradient_bytes_sent", e.gradient_bytes_sent},
                   {"parameter_bytes_sent", e.parameter_bytes_sent}});
  }
  return out;
}

nlohmann::json history_json(const std::vector<EvalPoint>& history) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& h : history) {
    out.push_back({{"step", h.step},
                   {"epoch", h.epoch},
                   {"train_seconds", h.train_seconds},
                   {"wall_seconds", h.wall_seconds},
                   {"test_accuracy", h.test_accuracy},
                   {"test_loss", h.test_loss},
                   {"gradient_bytes_sent", h.gradient_bytes_sent},
                   {"parameter_bytes_sent", h.parameter_bytes_sent}});
  }
  return out;
}

// What was trained, and how: the model and the options.
nlohmann::json setup_json(const TrainerOptions& options, const TrainResult& result) {
  return {
      {"program", "gradwire_train"},
      {"world_size", result.world_size},
      {"model", options.model},
      {"model_description", result.model_description},
      {"parameters", result.parameters},
      {"optimizer", options.optimizer},
      {"lr", options.lr},
      {"momentum", options.momentum},
      {"weight_decay", options.weight_decay},
      {"seed", options.seed},
      {"batch_size_per_rank", options.batch_size},
      {"accumulation_steps", result.accumulation_steps},
      {"global_batch_size", options.batch_size * static_cast<std::size_t>(result.world_size) *
                                static_cast<std::size_t>(result.accumulation_steps)},
      {"eval_every", options.schedule.eval_every},
      {"time_budget_seconds", options.schedule.time_budget},
  };
}

// How the run went: its steps, epochs and evaluations, how it ended, its checkpoints, its time.
nlohmann::json course_json(const TrainerOptions& options, const TrainResult& result) {
  const CheckpointResult& ck = result.checkpoints;
  return {
      {"steps", result.steps},
      {"epochs", epochs_json(result.epochs)},
      {"final_test_accuracy", result.final_test_accuracy},
      {"stopped_by_time_budget", result.stopped_by_time_budget},
      {"diverged", result.diverged ? nlohmann::json{{"after_steps", result.diverged->after_steps},
                                                    {"message", result.diverged->message}}
                                   : nlohmann::json(nullptr)},
      {"resumed_from", ck.resumed_from_step >= 0
                           ? nlohmann::json{{"step", ck.resumed_from_step},
                                            {"path", options.checkpoint.resume_path}}
                           : nlohmann::json(nullptr)},
      {"checkpoints", options.checkpoint.path.empty()
                          ? nlohmann::json(nullptr)
                          : nlohmann::json{{"path", options.checkpoint.path},
                                           {"every", options.checkpoint.every},
                                           {"written", ck.written},
                                           {"last_step", ck.last_step},
                                           {"final_error", ck.final_error.empty()
                                                               ? nlohmann::json(nullptr)
                                                               : nlohmann::json(ck.final_error)}}},
      {"history", history_json(result.history)},
      {"history_is",
       "every evaluation in order (--eval-every inside epochs, and each epoch's end): steps done, "
       "training seconds before it (rank 0 after a barrier, evaluation excluded), wall seconds "
       "since the start, test accuracy and loss of the ranks' average model, and rank 0's "
       "gradient and parameter bytes sent so far"},
      {"wall_seconds", result.wall_seconds},
      {"train_seconds", result.train_seconds},
      {"samples", result.samples},
      {"samples_per_second",
       result.train_seconds > 0 ? static_cast<double>(result.samples) / result.train_seconds : 0.0},
      {"samples_per_second_is",
       "training samples processed by all ranks / training wall seconds on rank 0 "
       "(evaluation excluded)"},
  };
}

nlohmann::json device_json(const DeviceResult& device) {
  return {{"kind", device.kind},
          {"name", device.name},
          {"peak_memory_bytes", device.peak_memory_bytes},
          {"timed_steps", device.timed_steps},
          {"compute_ms_per_step", device.compute_ms_per_step},
          {"after_backward_ms_per_step", device.after_backward_ms_per_step},
          {"exchange_ms_per_step", device.exchange_ms_per_step},
          {"fp16_products", device.fp16_products},
          {"fp32_products", device.fp32_products}};
}

// The bytes the run sent and what its strategies and its device did.
nlohmann::json exchange_json(const TrainResult& result) {
  const PerRankResult& ranks = result.per_rank;
  nlohmann::json traffic = traffic_json(ranks.traffic, ranks.node_of_rank, result.steps);
  const double exchanged = static_cast<double>(exchange_bytes_max_rank(ranks.traffic));
  return {
      {"gradient_bytes_per_step",
       traffic["gradient"]["sent_bytes_per_step_max_rank"].get<double>()},
      {"exchange_bytes_per_step",
       result.steps > 0 ? exchanged / static_cast<double>(result.steps) : 0.0},
      {"exchange_bytes_is",
       "gradient + parameter bytes sent by the busiest rank over the run, per step"},
      {"traffic", traffic},
      {"compression", compression_json(ranks.compression, ranks.traffic, result.steps)},
      {"sync", sync_json(result.sync, ranks.compression, exchanged, result.steps)},
      {"amp", amp_json(result.amp)},
      {"auto", auto_json(result.auto_decision)},
      {"device", device_json(result.device)},
      {"device_is",
       "rank 0's device; per step (mean over the timed steps, the first excluded), times on the "
       "model's stream (CUDA events on a GPU, the host clock on the CPU): forward and backward "
       "with the batch gather, then from backward's end to the step's end (the exchange backward "
       "did not hide, and the optimizer update), and the exchange's span on the communication "
       "stream (first bucket's start to last bucket's end); peak CUDA memory held in gradwire's "
       "buffers; the model's matrix products (GEMMs and convolution passes) by operand "
       "precision (GPU mode)"},
      {"traffic_is",
       "bytes per rank from gradwire's communicator counters (see "
       "Note [What the counters count] in plugin/comm/counting_communicator.h); inter_node_*: "
       "the part sent to ranks on other nodes, summed per node (a node's network link), the "
       "busiest node's"},
  };
}

}  // namespace

nlohmann::json make_report(const TrainerOptions& options, const config::Config& config,
                           const TrainResult& result) {
  nlohmann::json sources;
  nlohmann::json report = setup_json(options, result);
  report["config"] = config_json(config, &sources);
  report["config_sources"] = sources;
  report.update(course_json(options, result));
  report.update(exchange_json(result));
  return report;
}

void write_report(const nlohmann::json& report, const std::string& path) {
  write_file_atomically(path, report.dump(2) + "\n");
}

}  // namespace gw::trainer
