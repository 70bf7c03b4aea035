#include "reference_trainer/app/report.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "reference_trainer/app/output_file.h"

namespace gw::trainer {
namespace {

constexpr char kParamMagic[8] = {'G', 'W', 'P', 'A', 'R', 'A', 'M', '1'};

// Per kind: the busiest rank's bytes and the sum over ranks; and split by level
// (Note [What the counters count]), each node's inter-node bytes summed over its ranks: what its
// network link carries out, the busiest node's per step.
nlohmann::json traffic_json(const std::vector<TrafficCounters>& per_rank,
                            const std::vector<int>& node_of_rank, std::int64_t steps) {
  const auto per_step = [&](std::uint64_t bytes) {
    return steps > 0 ? static_cast<double>(bytes) / static_cast<double>(steps) : 0.0;
  };
  std::vector<int> nodes = node_of_rank;
  if (nodes.size() != per_rank.size()) {  // not known: a node per rank
    nodes.resize(per_rank.size());
    for (std::size_t r = 0; r < nodes.size(); ++r) nodes[r] = static_cast<int>(r);
  }
  const int node_count = nodes.empty() ? 0 : *std::max_element(nodes.begin(), nodes.end()) + 1;
  nlohmann::json out = nlohmann::json::object();
  for (int k = 0; k < kNumTrafficKinds; ++k) {
    std::uint64_t sent_max = 0, sent_total = 0, received_max = 0, calls = 0, inter_total = 0;
    std::vector<std::uint64_t> inter_of_node(static_cast<std::size_t>(node_count), 0);
    for (std::size_t r = 0; r < per_rank.size(); ++r) {
      const TrafficCounters::Kind& c = per_rank[r].kinds[k];
      sent_max = std::max(sent_max, c.sent_bytes);
      sent_total += c.sent_bytes;
      received_max = std::max(received_max, c.received_bytes);
      calls = std::max(calls, c.calls);
      inter_total += c.inter_node_sent_bytes;
      inter_of_node[static_cast<std::size_t>(nodes[r])] += c.inter_node_sent_bytes;
    }
    const std::uint64_t inter_max_node =
        inter_of_node.empty() ? 0 : *std::max_element(inter_of_node.begin(), inter_of_node.end());
    out[to_string(static_cast<TrafficKind>(k))] = {
        {"sent_bytes_max_rank", sent_max},
        {"sent_bytes_total", sent_total},
        {"received_bytes_max_rank", received_max},
        {"calls_max_rank", calls},
        {"sent_bytes_per_step_max_rank", per_step(sent_max)},
        {"inter_node_sent_bytes_total", inter_total},
        {"intra_node_sent_bytes_total", sent_total - inter_total},
        {"inter_node_sent_bytes_max_node", inter_max_node},
        {"inter_node_sent_bytes_per_step_max_node", per_step(inter_max_node)}};
  }
  return out;
}

// Per-step figures after the warm-up, from the busiest rank's counters.
nlohmann::json compression_json(const std::vector<CompressionStats>& per_rank,
                                const std::vector<TrafficCounters>& traffic, std::int64_t steps) {
  if (per_rank.empty()) return nlohmann::json::object();
  std::uint64_t after_max = 0, dense_max = 0, sent_max = 0;
  for (const auto& c : per_rank) {
    after_max = std::max(after_max, c.gradient_bytes_after_warmup);
    dense_max = std::max(dense_max, c.dense_bytes_per_step);
  }
  for (const auto& t : traffic) {
    sent_max = std::max(sent_max, t[TrafficKind::kGradient].sent_bytes);
  }
  const CompressionStats& c0 = per_rank.front();
  const double per_step_after =
      c0.steps_after_warmup > 0
          ? static_cast<double>(after_max) / static_cast<double>(c0.steps_after_warmup)
          : 0.0;
  const double dense_total = static_cast<double>(dense_max) * static_cast<double>(steps);
  return {
      {"compressor", c0.compressor},
      {"warmup_end_step", c0.warmup_end_step},
      {"steps_after_warmup", c0.steps_after_warmup},
      {"gradient_bytes_per_step_after_warmup", per_step_after},
      {"dense_gradient_bytes_per_step", dense_max},
      {"compression_ratio_after_warmup",
       per_step_after > 0 ? static_cast<double>(dense_max) / per_step_after : 0.0},
      {"compression_ratio_overall",
       sent_max > 0 ? dense_total / static_cast<double>(sent_max) : 0.0},
      {"sparse_exchanges", c0.sparse_exchanges},
      {"dense_fallbacks", c0.dense_fallbacks},
      {"is",
       "bytes from the busiest rank's gradient counters; dense = what GRADWIRE_COMPRESSOR=none "
       "sends per step (fp32 allreduce of every gradient); ratios are dense / actual"},
  };
}

// Gradient plus parameter bytes of the busiest rank: what a run exchanged to train the model
// (control traffic, evaluation sums and the like, is left out).
std::uint64_t exchange_bytes_max_rank(const std::vector<TrafficCounters>& traffic) {
  std::uint64_t out = 0;
  for (const auto& t : traffic) {
    out =
        std::max(out, t[TrafficKind::kGradient].sent_bytes + t[TrafficKind::kParameter].sent_bytes);
  }
  return out;
}

nlohmann::json amp_json(const AmpResult& amp) {
  if (!amp.enabled) return {{"enabled", false}};
  nlohmann::json history = nlohmann::json::array();
  for (const amp::ScaleChange& c : amp.scale_history) {
    history.push_back({{"step", c.step}, {"scale", c.scale}, {"event", amp::to_string(c.event)}});
  }
  return {
      {"enabled", true},
      {"allow", amp.allow},
      {"deny", amp.deny},
      {"infer", amp.infer},
      {"gradient_wire", amp.gradient_wire},
      {"dynamic_loss_scale", amp.dynamic},
      {"init_loss_scale", amp.init_scale},
      {"final_loss_scale", amp.final_scale},
      {"skipped_steps", amp.skipped_steps},
      {"loss_scale_history", history},
      {"loss_scale_history_is",
       "the initial scale (step -1), then every change: the step it followed and backoff (that "
       "step overflowed and was skipped on every rank) or growth"},
  };
}

nlohmann::json auto_json(const std::optional<AutoDecision>& decision) {
  if (!decision) return nullptr;
  const AutoDecision& d = *decision;
  nlohmann::json candidates = nlohmann::json::array();
  for (std::size_t i = 0; i < d.candidates.size(); ++i) {
    const autotune::Candidate& c = d.candidates[i];
    const bool predicted = i < d.choice.predictions.size();
    const autotune::Prediction p = predicted ? d.choice.predictions[i] : autotune::Prediction{};
    candidates.push_back(
        {{"name", c.name},
         {"period", c.period},
         {"bytes_per_step", c.bytes_per_step},
         {"collectives_per_step", c.collectives_per_step},
         {"codec_seconds", c.codec_s},
         {"last_bucket_bytes", c.last_bytes},
         {"last_bucket_collectives", c.last_collectives},
         {"last_bucket_codec_seconds", c.last_codec_s},
         {"exchange_timed_seconds",
          c.exchange_measured() ? nlohmann::json(c.exchange_s) : nlohmann::json(nullptr)},
         {"last_bucket_exchange_timed_seconds",
          c.exchange_measured() ? nlohmann::json(c.last_exchange_s) : nlohmann::json(nullptr)},
         {"accuracy_drop_points",
          c.accuracy_known ? nlohmann::json(c.accuracy_drop_points) : nlohmann::json(nullptr)},
         {"named", c.named},
         {"excluded", c.excluded},
         {"comm_seconds", p.comm_s},
         {"exchange_seconds", p.work_s},
         {"last_bucket_exchange_seconds", p.tail_s},
         {"exposed_seconds", p.exposed_s},
         {"predicted_step_seconds", p.step_s},
         {"link_bound", p.link_bound},
         {"verdict", i < d.choice.verdicts.size() ? d.choice.verdicts[i] : ""}});
  }
  nlohmann::json probes = nlohmann::json::array();
  for (const autotune::ProbePoint& p : d.probes) probes.push_back({p.bytes, p.seconds});
  const auto inputs = [](const autotune::StepInputs& s) {
    return nlohmann::json{{"compute_seconds", s.compute_s},
                          {"update_seconds", s.update_s},
                          {"overlap_seconds", s.overlap_s},
                          {"backward_on_host", s.backward_on_host}};
  };
  return {
      {"chosen", to_string(d.chosen)},
      {"step", d.step},
      {"how", d.how},
      {"measure_seconds", d.measure_seconds},
      {"probe_bytes", d.probe_bytes},
      {"probe_collectives", d.probe_collectives},
      {"trial_exchanges", d.trial_exchanges},
      {"bytes_across_nodes", d.bytes_across_nodes},
      {"link",
       {{"latency_seconds", d.link.latency_s},
        {"seconds_per_byte", d.link.seconds_per_byte},
        {"burst_bytes", d.link.burst_bytes},
        {"burst_seconds_per_byte", d.link.burst_seconds_per_byte}}},
      {"probes", probes},
      {"probes_are", "[bytes this rank sent, seconds] of each probe allreduce, the slowest rank's"},
      {"inputs", inputs(d.inputs)},
      {"max_accuracy_drop_points", d.max_accuracy_drop_points},
      {"candidates", candidates},
      {"check", d.checked ? nlohmann::json{{"steps", d.check_steps},
                                           {"inputs", inputs(d.check_inputs)},
                                           {"predicted_step_seconds", d.predicted_step_s},
                                           {"measured_step_seconds", d.measured_step_s},
                                           {"error", d.measured_step_s > 0 ? (d.predicted_step_s -
                                                                              d.measured_step_s) /
                                                                                 d.measured_step_s
                                                                           : 0.0}}
                          : nlohmann::json(nullptr)},
      {"is",
       "GRADWIRE_COMPRESSOR=auto (docs/AUTO.md): what it measured at its decision, each "
       "candidate's predicted step (Note [The auto cost model]) and verdict; check: the inputs "
       "re-measured over the steps after the decision (medians), the chosen candidate's "
       "prediction from them, and the median step measured"},
  };
}

nlohmann::json sync_json(const SyncStats& sync, const std::vector<CompressionStats>& compression,
                         double exchanged, std::int64_t steps) {
  std::uint64_t dense = 0;
  for (const auto& c : compression) dense = std::max(dense, c.dense_bytes_per_step);
  const double dense_total = static_cast<double>(dense) * static_cast<double>(steps);
  nlohmann::json points = nlohmann::json::array();
  std::int64_t scheduled = 0;
  for (const auto& p : sync.points) {
    nlohmann::json point = {{"step", p.step},
                            {"local_steps", p.local_steps},
                            {"k", p.k},
                            {"next_k", p.next_k},
                            {"requested", p.requested}};
    if (p.has_loss) point["loss"] = p.loss;
    if (!p.requested) ++scheduled;
    points.push_back(std::move(point));
  }
  return {
      {"policy", sync.policy},
      {"gradient_exchanges", sync.gradient_exchanges},
      {"parameter_exchanges", sync.parameter_exchanges},
      {"scheduled_averaging_points", scheduled},
      {"requested_averaging_points", sync.parameter_exchanges - scheduled},
      {"state_exchanges", sync.state_exchanges},
      {"exchange_bytes_per_step", steps > 0 ? exchanged / static_cast<double>(steps) : 0.0},
      {"traffic_ratio_vs_dense", exchanged > 0 ? dense_total / exchanged : 0.0},
      {"averaging_points", points},
      {"is",
       "exchanges counted by the optimizer (the same on every rank); averaging_points lists each "
       "parameter averaging: the step after whose update it ran, the local steps before it, k (the "
       "period in force), next_k (the period from there), the mean training loss "
       "(adaptive_local_sgd), and whether the program requested it (synchronize_parameters before "
       "evaluation) rather than the schedule; bytes are the busiest rank's gradient + parameter "
       "bytes, against GRADWIRE_COMPRESSOR=none's fp32 gradient allreduce at every step"},
  };
}

}  // namespace

nlohmann::json make_report(const TrainerOptions& options, const config::Config& config,
                           const TrainResult& result) {
  nlohmann::json cfg = nlohmann::json::object(), sources = nlohmann::json::object();
  for (const auto& p : config.registry().params()) {
    cfg[p.key] = config.text(p.key);
    sources[p.key] = to_string(config.source(p.key));
  }
  nlohmann::json epochs = nlohmann::json::array();
  for (const auto& e : result.epochs) {
    epochs.push_back({{"epoch", e.epoch},
                      {"loss", e.loss},
                      {"test_accuracy", e.test_accuracy},
                      {"test_loss", e.test_loss},
                      {"wall_seconds", e.wall_seconds},
                      {"train_seconds", e.train_seconds},
                      {"samples", e.samples},
                      {"gradient_bytes_sent", e.gradient_bytes_sent},
                      {"parameter_bytes_sent", e.parameter_bytes_sent}});
  }
  nlohmann::json history = nlohmann::json::array();
  for (const auto& h : result.history) {
    history.push_back({{"step", h.step},
                       {"epoch", h.epoch},
                       {"train_seconds", h.train_seconds},
                       {"wall_seconds", h.wall_seconds},
                       {"test_accuracy", h.test_accuracy},
                       {"test_loss", h.test_loss},
                       {"gradient_bytes_sent", h.gradient_bytes_sent},
                       {"parameter_bytes_sent", h.parameter_bytes_sent}});
  }
  nlohmann::json traffic =
      traffic_json(result.per_rank.traffic, result.per_rank.node_of_rank, result.steps);
  const double exchanged = static_cast<double>(exchange_bytes_max_rank(result.per_rank.traffic));
  const double samples_per_second =
      result.train_seconds > 0 ? static_cast<double>(result.samples) / result.train_seconds : 0.0;
  return {
      {"program", "gradwire_train"},
      {"config", cfg},
      {"config_sources", sources},
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
      {"global_batch_size", options.batch_size * static_cast<std::size_t>(result.world_size)},
      {"steps", result.steps},
      {"epochs", epochs},
      {"final_test_accuracy", result.final_test_accuracy},
      {"eval_every", options.schedule.eval_every},
      {"time_budget_seconds", options.schedule.time_budget},
      {"stopped_by_time_budget", result.stopped_by_time_budget},
      {"diverged", result.diverged ? nlohmann::json{{"after_steps", result.diverged->after_steps},
                                                    {"message", result.diverged->message}}
                                   : nlohmann::json(nullptr)},
      {"resumed_from", result.checkpoints.resumed_from_step >= 0
                           ? nlohmann::json{{"step", result.checkpoints.resumed_from_step},
                                            {"path", options.checkpoint.resume_path}}
                           : nlohmann::json(nullptr)},
      {"checkpoints", options.checkpoint.path.empty()
                          ? nlohmann::json(nullptr)
                          : nlohmann::json{{"path", options.checkpoint.path},
                                           {"every", options.checkpoint.every},
                                           {"written", result.checkpoints.written},
                                           {"last_step", result.checkpoints.last_step}}},
      {"history", history},
      {"history_is",
       "every evaluation in order (--eval-every inside epochs, and each epoch's end): steps done, "
       "training seconds before it (rank 0 after a barrier, evaluation excluded), wall seconds "
       "since the start, test accuracy and loss of the ranks' average model, and rank 0's "
       "gradient and parameter bytes sent so far"},
      {"wall_seconds", result.wall_seconds},
      {"train_seconds", result.train_seconds},
      {"samples", result.samples},
      {"samples_per_second", samples_per_second},
      {"samples_per_second_is",
       "training samples processed by all ranks / training wall seconds on rank 0 "
       "(evaluation excluded)"},
      {"gradient_bytes_per_step",
       traffic["gradient"]["sent_bytes_per_step_max_rank"].get<double>()},
      {"exchange_bytes_per_step",
       result.steps > 0 ? exchanged / static_cast<double>(result.steps) : 0.0},
      {"exchange_bytes_is",
       "gradient + parameter bytes sent by the busiest rank over the run, per step"},
      {"traffic", traffic},
      {"compression",
       compression_json(result.per_rank.compression, result.per_rank.traffic, result.steps)},
      {"sync", sync_json(result.sync, result.per_rank.compression, exchanged, result.steps)},
      {"amp", amp_json(result.amp)},
      {"auto", auto_json(result.auto_decision)},
      {"device",
       {{"kind", result.device.kind},
        {"name", result.device.name},
        {"peak_memory_bytes", result.device.peak_memory_bytes},
        {"timed_steps", result.device.timed_steps},
        {"compute_ms_per_step", result.device.compute_ms_per_step},
        {"after_backward_ms_per_step", result.device.after_backward_ms_per_step},
        {"exchange_ms_per_step", result.device.exchange_ms_per_step},
        {"fp16_products", result.device.fp16_products},
        {"fp32_products", result.device.fp32_products}}},
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

void write_report(const nlohmann::json& report, const std::string& path) {
  write_file_atomically(path, report.dump(2) + "\n");
}

std::string summary_text(const nlohmann::json& r) {
  const auto& t = r["traffic"];
  const double mb = 1e6;
  std::ostringstream out;
  char line[256];
  out << "---- gradwire_train summary ----\n";
  std::snprintf(line, sizeof line, "%-28s %.4f\n", "final test accuracy",
                r["final_test_accuracy"].get<double>());
  out << line;
  std::snprintf(line, sizeof line, "%-28s %.1f s (%lld steps, %d ranks)\n", "wall time",
                r["wall_seconds"].get<double>(),
                static_cast<long long>(r["steps"].get<std::int64_t>()), r["world_size"].get<int>());
  out << line;
  if (r.contains("resumed_from") && !r["resumed_from"].is_null()) {
    std::snprintf(line, sizeof line, "%-28s step %lld (figures cover the whole run)\n",
                  "resumed from",
                  static_cast<long long>(r["resumed_from"]["step"].get<std::int64_t>()));
    out << line;
  }
  std::snprintf(line, sizeof line, "%-28s %.0f\n", "samples/s (training)",
                r["samples_per_second"].get<double>());
  out << line;
  for (const char* kind : {"gradient", "parameter", "control"}) {
    std::snprintf(line, sizeof line, "%-28s %.2f MB sent (max rank), %.2f MB all ranks\n",
                  (std::string(kind) + " traffic").c_str(),
                  t[kind]["sent_bytes_max_rank"].get<double>() / mb,
                  t[kind]["sent_bytes_total"].get<double>() / mb);
    out << line;
  }
  if (r.contains("topology") && r["topology"]["nodes"].get<int>() > 1 &&
      t["gradient"].contains("inter_node_sent_bytes_per_step_max_node")) {
    std::snprintf(line, sizeof line, "%-28s %.3f MB/step out of the busiest node (%s)\n",
                  "gradient inter-node",
                  t["gradient"]["inter_node_sent_bytes_per_step_max_node"].get<double>() / mb,
                  r["topology"]["hierarchical"].get<bool>() ? "two levels" : "flat");
    out << line;
  }
  std::snprintf(line, sizeof line, "%-28s %.3f MB\n", "gradient bytes per step",
                r["gradient_bytes_per_step"].get<double>() / mb);
  out << line;
  std::snprintf(line, sizeof line, "%-28s %.3f MB (gradients + parameters)\n",
                "exchange bytes per step", r["exchange_bytes_per_step"].get<double>() / mb);
  out << line;
  const auto& sync = r["sync"];
  if (sync["policy"] != "every_step") {
    std::snprintf(line, sizeof line,
                  "%-28s %s: %lld gradient exchanges, %lld parameter averagings (%lld requested); "
                  "%.1fx fewer bytes than dense\n",
                  "sync", sync["policy"].get<std::string>().c_str(),
                  static_cast<long long>(sync["gradient_exchanges"].get<std::int64_t>()),
                  static_cast<long long>(sync["parameter_exchanges"].get<std::int64_t>()),
                  static_cast<long long>(sync["requested_averaging_points"].get<std::int64_t>()),
                  sync["traffic_ratio_vs_dense"].get<double>());
    out << line;
  }
  const auto& c = r["compression"];
  if (c.contains("compressor") && c["compressor"] != "none" &&
      c["steps_after_warmup"].get<std::int64_t>() > 0) {
    std::snprintf(line, sizeof line,
                  "%-28s %s: %.4f MB/step after warm-up (step %lld on), %.1fx less than dense; "
                  "%.1fx over the run; %lld dense fallbacks\n",
                  "compression", c["compressor"].get<std::string>().c_str(),
                  c["gradient_bytes_per_step_after_warmup"].get<double>() / mb,
                  static_cast<long long>(c["warmup_end_step"].get<std::int64_t>()),
                  c["compression_ratio_after_warmup"].get<double>(),
                  c["compression_ratio_overall"].get<double>(),
                  static_cast<long long>(c["dense_fallbacks"].get<std::int64_t>()));
    out << line;
  }
  if (r.contains("device") && r["device"]["kind"] == "cuda") {
    const auto& d = r["device"];
    std::snprintf(line, sizeof line,
                  "%-28s %s: %.3f ms compute, %.3f ms exchange, %.3f ms after backward per step; "
                  "peak %.1f MB\n",
                  "device", d["name"].get<std::string>().c_str(),
                  d["compute_ms_per_step"].get<double>(), d["exchange_ms_per_step"].get<double>(),
                  d["after_backward_ms_per_step"].get<double>(),
                  d["peak_memory_bytes"].get<double>() / mb);
    out << line;
  }
  if (r.contains("auto") && !r["auto"].is_null()) {
    const auto& a = r["auto"];
    std::string check = "not checked (fewer steps than GRADWIRE_AUTO_CHECK_STEPS after it)";
    if (!a["check"].is_null()) {
      char text[160];
      std::snprintf(text, sizeof text, "step %.2f ms measured, %.2f ms predicted (%+.1f%%)",
                    1e3 * a["check"]["measured_step_seconds"].get<double>(),
                    1e3 * a["check"]["predicted_step_seconds"].get<double>(),
                    100 * a["check"]["error"].get<double>());
      check = text;
    }
    std::snprintf(line, sizeof line, "%-28s chose %s at step %lld (%s, %.3f s); %s\n",
                  "auto compressor", a["chosen"].get<std::string>().c_str(),
                  static_cast<long long>(a["step"].get<std::int64_t>()),
                  a["how"].get<std::string>().c_str(), a["measure_seconds"].get<double>(),
                  check.c_str());
    out << line;
  }
  const auto& amp = r["amp"];
  if (amp["enabled"].get<bool>()) {
    std::snprintf(line, sizeof line,
                  "%-28s fp16 ops: %s; gradient wire %s; loss scale %g -> %g (%zu changes); "
                  "%lld steps skipped\n",
                  "mixed precision", amp["allow"].dump().c_str(),
                  amp["gradient_wire"].get<std::string>().c_str(),
                  amp["init_loss_scale"].get<double>(), amp["final_loss_scale"].get<double>(),
                  amp["loss_scale_history"].size() - 1,
                  static_cast<long long>(amp["skipped_steps"].get<std::int64_t>()));
    out << line;
  }
  return out.str();
}

void save_parameters(const std::vector<float>& values, const std::string& path) {
  const std::uint64_t count = values.size();
  std::string bytes(kParamMagic, sizeof kParamMagic);
  bytes.append(reinterpret_cast<const char*>(&count), sizeof count);
  bytes.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  write_file_atomically(path, bytes);
}

std::vector<float> load_parameters(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read parameters from '" + path + "'");
  char magic[8];
  std::uint64_t count = 0;
  in.read(magic, sizeof magic);
  in.read(reinterpret_cast<char*>(&count), sizeof count);
  if (!in || std::memcmp(magic, kParamMagic, sizeof magic) != 0) {
    throw std::runtime_error("'" + path + "' is not a gradwire parameter file");
  }
  if (count > (std::uint64_t{1} << 34)) {
    throw std::runtime_error("'" + path + "': implausible parameter count " +
                             std::to_string(count));
  }
  std::vector<float> values(count);
  in.read(reinterpret_cast<char*>(values.data()),
          static_cast<std::streamsize>(count * sizeof(float)));
  if (!in) throw std::runtime_error("'" + path + "' is truncated");
  return values;
}

}  // namespace gw::trainer
