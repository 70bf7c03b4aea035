// summary_text (report.h): the table rank 0 prints at the end, read from the JSON report.
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>

#include "reference_trainer/app/report.h"

namespace gw::trainer {
namespace {

constexpr double kMb = 1e6;

// printf into one line of the table (at most 255 characters, as a char[256] holds).
template <typename... Args>
std::string formatted(const char* format, Args... args) {
  char line[256];
  std::snprintf(line, sizeof line, format, args...);
  return line;
}

long long integer(const nlohmann::json& value) {
  return static_cast<long long>(value.get<std::int64_t>());
}

// Accuracy, time, the resume point and throughput.
std::string run_lines(const nlohmann::json& r) {
  std::string out =
      formatted("%-28s %.4f\n", "final test accuracy", r["final_test_accuracy"].get<double>());
  out +=
      formatted("%-28s %.1f s (%lld steps, %d ranks)\n", "wall time",
                r["wall_seconds"].get<double>(), integer(r["steps"]), r["world_size"].get<int>());
  if (r.contains("resumed_from") && !r["resumed_from"].is_null()) {
    out += formatted("%-28s step %lld (figures cover the whole run)\n", "resumed from",
                     integer(r["resumed_from"]["step"]));
  }
  out += formatted("%-28s %.0f\n", "samples/s (training)", r["samples_per_second"].get<double>());
  return out;
}

// Bytes by kind, across nodes, and per step.
std::string traffic_lines(const nlohmann::json& r) {
  const auto& t = r["traffic"];
  std::string out;
  for (const char* kind : {"gradient", "parameter", "control"}) {
    out += formatted("%-28s %.2f MB sent (max rank), %.2f MB all ranks\n",
                     (std::string(kind) + " traffic").c_str(),
                     t[kind]["sent_bytes_max_rank"].get<double>() / kMb,
                     t[kind]["sent_bytes_total"].get<double>() / kMb);
  }
  if (r.contains("topology") && r["topology"]["nodes"].get<int>() > 1 &&
      t["gradient"].contains("inter_node_sent_bytes_per_step_max_node")) {
    out += formatted("%-28s %.3f MB/step out of the busiest node (%s)\n", "gradient inter-node",
                     t["gradient"]["inter_node_sent_bytes_per_step_max_node"].get<double>() / kMb,
                     r["topology"]["hierarchical"].get<bool>() ? "two levels" : "flat");
  }
  out += formatted("%-28s %.3f MB\n", "gradient bytes per step",
                   r["gradient_bytes_per_step"].get<double>() / kMb);
  out += formatted("%-28s %.3f MB (gradients + parameters)\n", "exchange bytes per step",
                   r["exchange_bytes_per_step"].get<double>() / kMb);
  return out;
}

// What the strategies did: the sync policy, the compressor.
std::string strategy_lines(const nlohmann::json& r) {
  std::string out;
  const auto& sync = r["sync"];
  if (sync["policy"] != "every_step") {
    out += formatted(
        "%-28s %s: %lld gradient exchanges, %lld parameter averagings (%lld requested); "
        "%.1fx fewer bytes than dense\n",
        "sync", sync["policy"].get<std::string>().c_str(), integer(sync["gradient_exchanges"]),
        integer(sync["parameter_exchanges"]), integer(sync["requested_averaging_points"]),
        sync["traffic_ratio_vs_dense"].get<double>());
  }
  const auto& c = r["compression"];
  if (c.contains("compressor") && c["compressor"] != "none" &&
      c["steps_after_warmup"].get<std::int64_t>() > 0) {
    out += formatted(
        "%-28s %s: %.4f MB/step after warm-up (step %lld on), %.1fx less than dense; "
        "%.1fx over the run; %lld dense fallbacks\n",
        "compression", c["compressor"].get<std::string>().c_str(),
        c["gradient_bytes_per_step_after_warmup"].get<double>() / kMb,
        integer(c["warmup_end_step"]), c["compression_ratio_after_warmup"].get<double>(),
        c["compression_ratio_overall"].get<double>(), integer(c["dense_fallbacks"]));
  }
  return out;
}

// The GPU, auto's choice and mixed precision, where the run had them.
std::string device_and_auto_lines(const nlohmann::json& r) {
  std::string out;
  if (r.contains("device") && r["device"]["kind"] == "cuda") {
    const auto& d = r["device"];
    out += formatted(
        "%-28s %s: %.3f ms compute, %.3f ms exchange, %.3f ms after backward per step; "
        "peak %.1f MB\n",
        "device", d["name"].get<std::string>().c_str(), d["compute_ms_per_step"].get<double>(),
        d["exchange_ms_per_step"].get<double>(), d["after_backward_ms_per_step"].get<double>(),
        d["peak_memory_bytes"].get<double>() / kMb);
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
    out += formatted("%-28s chose %s at step %lld (%s, %.3f s); %s\n", "auto compressor",
                     a["chosen"].get<std::string>().c_str(), integer(a["step"]),
                     a["how"].get<std::string>().c_str(), a["measure_seconds"].get<double>(),
                     check.c_str());
  }
  const auto& amp = r["amp"];
  if (amp["enabled"].get<bool>()) {
    out += formatted(
        "%-28s fp16 ops: %s; gradient wire %s; loss scale %g -> %g (%zu changes); "
        "%lld steps skipped\n",
        "mixed precision", amp["allow"].dump().c_str(),
        amp["gradient_wire"].get<std::string>().c_str(), amp["init_loss_scale"].get<double>(),
        amp["final_loss_scale"].get<double>(), amp["loss_scale_history"].size() - 1,
        integer(amp["skipped_steps"]));
  }
  return out;
}

}  // namespace

std::string summary_text(const nlohmann::json& r) {
  std::ostringstream out;
  out << "---- gradwire_train summary ----\n";
  out << run_lines(r) << traffic_lines(r) << strategy_lines(r) << device_and_auto_lines(r);
  return out.str();
}

}  // namespace gw::trainer
