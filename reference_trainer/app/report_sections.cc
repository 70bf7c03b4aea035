#include "reference_trainer/app/report_sections.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace gw::trainer {

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
    if (p.fragment >= 0) point["fragment"] = p.fragment;
    if (!p.requested) ++scheduled;
    points.push_back(std::move(point));
  }
  nlohmann::json out = {
      {"policy", sync.policy},
      {"parameter_wire", sync.parameter_wire},
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
       "evaluation) rather than the schedule; under streaming diloco one per fragment's outer "
       "step, with the fragment and the step after which its exchange began; bytes are the busiest "
       "rank's gradient + parameter "
       "bytes, against GRADWIRE_COMPRESSOR=none's fp32 gradient allreduce at every step; "
       "parameter_wire: how the parameters travel at a point (diloco: its pseudo-gradients, "
       "through GRADWIRE_COMPRESSOR), outer_optimizer: diloco's"},
  };
  if (!sync.outer_optimizer.empty()) out["outer_optimizer"] = sync.outer_optimizer;
  return out;
}

}  // namespace gw::trainer
