#include "plugin/auto/auto_strategy.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <istream>
#include <numeric>
#include <ostream>
#include <stdexcept>

#include "plugin/auto/medians.h"
#include "plugin/config/params.h"

namespace gw {
namespace {

namespace keys = config::keys;
using Clock = AutoTiming::Clock;

constexpr char kRestored[] = "restored from a checkpoint";

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

AccuracyTable accuracy_table(const config::Config& config) {
  const std::string& file = config.get_string(keys::kAutoAccuracyFile);
  return file.empty() ? AccuracyTable::built_in() : AccuracyTable::from_file(file);
}

}  // namespace

AutoStrategy::AutoStrategy(const config::Config& config, const CompressorSettings& settings,
                           const SyncSettings& sync, const Optimizer& inner,
                           const ParameterSet& params, CountingCommunicator& comm, Logger log)
    : settings_(settings),
      sync_(sync),
      momentum_(inner.sgd_momentum()),
      comm_(comm),
      log_(std::move(log)),
      stream_(params.stream()),
      max_drop_(config.get_float(keys::kAutoMaxAccuracyDrop)),
      check_steps_(config.get_int(keys::kAutoCheckSteps)) {
  const AccuracyTable table = accuracy_table(config);
  candidates_ = list_candidates({config, settings, sync, inner, params, table, max_drop_});
}

bool AutoStrategy::chose_local_sgd() const {
  return decision_ && decision_->chosen == AutoOption::kLocalSgd;
}

bool AutoStrategy::wants_times() const {
  return decision_ && !decision_->checked && decision_->how != kRestored;
}

void AutoStrategy::restarted() {
  timing_.started = Clock::now();
  timing_.last_end = timing_.started;
  timing_.released = false;
}

void AutoStrategy::bucket_released(std::size_t /*b*/, const kernels::Stream& /*program*/) {
  if (timing_.released) return;
  timing_.released = true;
  timing_.first_release = Clock::now();
}

void AutoStrategy::gradients_ready() { timing_.ready = Clock::now(); }

void AutoStrategy::step_ended(const StepEnd& end) {
  const Clock::time_point now = Clock::now();
  AutoTiming& t = timing_;
  if (wants_times()) {
    // The step that decided is left out: it ran the probes and trials.
    if (t.skip_next) {
      t.skip_next = false;
    } else {
      t.compute.push_back(seconds(t.ready - t.last_end));
      t.overlap.push_back(t.released ? seconds(t.ready - t.first_release) : 0.0);
      t.update.push_back(seconds(end.update_end - end.update_begin));
      t.interval.push_back(seconds(now - t.last_end));
    }
    if (static_cast<std::int64_t>(t.interval.size()) >= check_steps_) finish_check();
  }
  t.last_end = now;
  t.released = false;
}

void AutoStrategy::finish_check() {
  AutoDecision& d = *decision_;
  const AutoTiming& t = timing_;
  d.check_steps = static_cast<std::int64_t>(t.interval.size());
  // Local SGD's step is long once every K: the mean holds it, the median would not.
  const bool local = d.candidates[d.choice.chosen].period > 1;
  // The slowest rank's, as at the decision: every rank reaches this step together.
  std::vector<double> medians = {
      median(t.compute), median(t.update), median(t.overlap),
      local ? std::accumulate(t.interval.begin(), t.interval.end(), 0.0) /
                  static_cast<double>(t.interval.size())
            : median(t.interval)};
  if (comm_.size() > 1) max_over_ranks(comm_, medians, stream_);
  d.check_inputs.compute_s = medians[0];
  d.check_inputs.update_s = medians[1];
  d.check_inputs.overlap_s = medians[2];
  d.check_inputs.backward_on_host = d.inputs.backward_on_host;
  d.measured_step_s = medians[3];
  d.predicted_step_s =
      autotune::predict(d.link, d.check_inputs, d.candidates[d.choice.chosen]).step_s;
  d.checked = true;
  log_.log(LogLevel::kInfo,
           "auto: %s over the %lld steps after the decision (medians, the slowest rank's): "
           "compute %.2f ms, update %.2f ms, overlap %.2f ms; step %.2f ms measured, %.2f ms "
           "predicted (%+.1f%%)",
           to_string(d.chosen), static_cast<long long>(d.check_steps),
           1e3 * d.check_inputs.compute_s, 1e3 * d.check_inputs.update_s,
           1e3 * d.check_inputs.overlap_s, 1e3 * d.measured_step_s, 1e3 * d.predicted_step_s,
           d.measured_step_s > 0
               ? 100.0 * (d.predicted_step_s - d.measured_step_s) / d.measured_step_s
               : 0.0);
}

CompressorSettings AutoStrategy::restore(const std::string& chosen, std::int64_t step) {
  const std::optional<AutoOption> option = parse_auto_option(chosen);
  if (!option || !candidates_.index_of(*option)) {
    throw std::runtime_error("the checkpoint's auto choice '" + chosen +
                             "' is not among this run's candidates (" +
                             std::string(keys::kAutoCandidates) + ")");
  }
  AutoDecision d;
  d.chosen = *option;
  d.step = step;
  d.how = kRestored;
  d.max_accuracy_drop_points = max_drop_;
  decision_ = d;
  return settings_for(settings_, d.chosen);
}

// Note [The auto choice in a checkpoint]
// Under GRADWIRE_COMPRESSOR=auto the compressor's state is the chosen compressor's, so the choice
// goes first, as one line: "gradwire-auto <compressor> <step>" ("-" before step 0 decided). A run
// resumed from it builds that compressor without measuring again, so it continues as the
// straight run would.
void AutoStrategy::save_choice(std::ostream& out) const {
  const AutoDecision* d = decision();
  out << "gradwire-auto " << (d ? to_string(d->chosen) : "-") << ' ' << (d ? d->step : 0)
      << '\n';
}

std::optional<CompressorSettings> AutoStrategy::load_choice(std::istream& in) {
  std::string tag, chosen;
  std::int64_t step = 0;
  in >> tag >> chosen >> step;
  in.get();
  if (!in || tag != "gradwire-auto") {
    throw std::runtime_error(
        "optimizer state: no GRADWIRE_COMPRESSOR=auto choice at its start "
        "(written by a run with another compressor?)");
  }
  if (chosen == "-") return std::nullopt;
  if (!decided()) return restore(chosen, step);
  if (to_string(decision_->chosen) != chosen) {
    throw std::runtime_error("optimizer state: auto chose " + chosen + ", this run " +
                             to_string(decision_->chosen));
  }
  return std::nullopt;
}

CompressorSettings AutoStrategy::decide(const ParameterSet& params, const fusion::BucketPlan& plan,
                                        const float* gradients, std::int64_t step) {
  const Clock::time_point begin = Clock::now();
  AutoDecision d;
  d.step = step;
  d.max_accuracy_drop_points = max_drop_;
  d.candidates = candidates_.models;
  Measured m(candidates_.size());
  // From the program's last barrier (or the optimizer's construction), whichever came later: a
  // trainer synchronises its ranks before its first step.
  const Clock::time_point from = std::max(timing_.started, comm_.last_barrier_end());
  m.step.compute_s = seconds(timing_.ready - from);
  m.step.overlap_s = timing_.released ? seconds(timing_.ready - timing_.first_release) : 0.0;
  if (comm_.size() == 1) {
    d.how = "one rank";  // nothing to exchange: the choice is the first eligible, by the model
  } else {
    d.how = "measured";
    measure_exchanges(params, plan, gradients, d, m);
  }
  if (inject_measurements) inject_measurements(m);
  combine_over_ranks(comm_, m, stream_.is_host(), d.inputs, d.candidates, stream_);
  spread_over_period(d.candidates);
  d.choice = autotune::choose(d.link, d.inputs, d.candidates, max_drop_);
  agree_on_choice(d, stream_);
  d.chosen = candidates_.options[d.choice.chosen];
  d.measure_seconds = seconds(Clock::now() - begin);
  decision_ = d;
  timing_.skip_next = true;
  if (comm_.rank() == 0) log_decision();
  return settings_for(settings_, d.chosen);
}

void AutoStrategy::measure_exchanges(const ParameterSet& params, const fusion::BucketPlan& plan,
                                     const float* gradients, AutoDecision& d, Measured& m) {
  const WireEstimate wire = WireEstimate::of(comm_);
  d.bytes_across_nodes = wire.across;
  const LinkMeasurement link = probe_link(comm_, gradients, params.numel(), wire.across, stream_);
  d.link = link.link;
  d.probes = link.probes;
  d.probe_collectives = link.collectives;
  d.probe_bytes = link.bytes;
  TrialBuckets buckets(params, plan, gradients);
  std::vector<double> cheap(candidates_.size(), 0.0);  // 1: this rank would exchange it for real
  measure_candidates(params, buckets, wire, d, m, cheap);
  time_exchanges(params, buckets, d, m, cheap);
}

std::optional<std::size_t> AutoStrategy::same_as_dense(std::size_t i) const {
  // Local SGD's averaging is dense's exchange (Note [Parameter averaging wire]): where none is a
  // candidate too (it comes first), local SGD takes its figures rather than measure them again.
  const std::optional<std::size_t> dense = candidates_.index_of(AutoOption::kNone);
  if (dense && *dense < i && candidates_.models[i].period > 1) return dense;
  return std::nullopt;
}

std::unique_ptr<compressors::Compressor> AutoStrategy::trial_compressor(
    std::size_t i, const ParameterSet& params) const {
  auto trial = make_trial_compressor(settings_for(settings_, candidates_.options[i]),
                                     params.numels(), params.rows(), momentum_);
  trial->set_stream(stream_);
  return trial;
}

void AutoStrategy::measure_candidates(const ParameterSet& params, TrialBuckets& buckets,
                                      const WireEstimate& wire, AutoDecision& d, Measured& m,
                                      std::vector<double>& cheap) {
  for (std::size_t i = 0; i < candidates_.size(); ++i) {
    autotune::Candidate& c = d.candidates[i];
    if (!c.excluded.empty()) continue;
    if (const std::optional<std::size_t> dense = same_as_dense(i)) {
      for (std::vector<double>* v :
           {&m.codec_s, &m.bytes_per_step, &m.last_codec_s, &m.last_bytes})
        (*v)[i] = (*v)[*dense];
      c.collectives_per_step = d.candidates[*dense].collectives_per_step;
      c.last_collectives = d.candidates[*dense].last_collectives;
      continue;  // and its exchange, dense's (time_exchanges)
    }
    auto trial = trial_compressor(i, params);
    trial->begin_step(trial->warmup_end_step());
    // One that may not be chosen is measured once, for its report line.
    const bool eligible = autotune::may_choose(c, max_drop_);
    const CodecFigures f = trial_codec(*trial, buckets, wire, eligible ? kTrialPasses : 1);
    m.codec_s[i] = f.codec_s;
    m.bytes_per_step[i] = f.bytes;
    m.last_codec_s[i] = f.last_codec_s;
    m.last_bytes[i] = f.last_bytes;
    c.collectives_per_step = f.calls;
    c.last_collectives = f.last_calls;
    if (eligible && f.bytes * d.link.seconds_per_byte <= kTrialExchangeSeconds) cheap[i] = 1;
  }
}

void AutoStrategy::time_exchanges(const ParameterSet& params, TrialBuckets& buckets,
                                  AutoDecision& d, Measured& m, const std::vector<double>& cheap) {
  // The ranks' byte counts differ a little: every rank exchanges what all of them would.
  std::vector<double> skip(cheap.size());
  for (std::size_t i = 0; i < cheap.size(); ++i) skip[i] = 1.0 - cheap[i];
  max_over_ranks(comm_, skip, stream_);
  for (std::size_t i = 0; i < candidates_.size(); ++i) {
    if (const std::optional<std::size_t> dense = same_as_dense(i)) {
      m.exchange_s[i] = m.exchange_s[*dense];
      m.last_exchange_s[i] = m.last_exchange_s[*dense];
      continue;
    }
    if (skip[i] > 0 || !d.candidates[i].excluded.empty()) continue;
    auto trial = trial_compressor(i, params);
    const ExchangeFigures f = timed_exchange(comm_, *trial, buckets);
    m.exchange_s[i] = f.all_s;
    m.last_exchange_s[i] = f.last_s;
    d.trial_exchanges += 1 + kTrialExchanges;
  }
}

void AutoStrategy::agree_on_choice(AutoDecision& d, const kernels::Stream& stream) {
  if (comm_.size() == 1) return;
  // Rank 0's choice is every rank's.
  kernels::Buffer<std::int64_t> buffer;
  std::int64_t chosen = static_cast<std::int64_t>(d.choice.chosen);
  std::int64_t* b = buffer.reserve_discard(1, stream);
  kernels::copy_bytes(b, &chosen, sizeof(chosen), stream);
  stream.synchronize();
  comm_.broadcast(b, 1, DataType::kInt64, 0, TrafficKind::kControl);
  kernels::copy_bytes(&chosen, b, sizeof(chosen), stream);
  stream.synchronize();
  if (static_cast<std::size_t>(chosen) != d.choice.chosen) {
    d.choice.verdicts[d.choice.chosen] = "slower";
    d.choice.chosen = static_cast<std::size_t>(chosen);
    d.choice.verdicts[d.choice.chosen] = "chosen (rank 0's)";
  }
}

void AutoStrategy::log_decision() const {
  const AutoDecision& d = *decision_;
  log_.log(LogLevel::kInfo,
           "auto: measured at step %lld in %.3f s (%s): latency %.3f ms; %.3f MB/s sustained, "
           "burst %.0f B at %.1f MB/s; compute %.2f ms, overlap %.2f ms; bytes counted %s",
           static_cast<long long>(d.step), d.measure_seconds, d.how.c_str(),
           1e3 * d.link.latency_s,
           d.link.seconds_per_byte > 0 ? 1e-6 / d.link.seconds_per_byte : INFINITY,
           d.link.burst_bytes,
           d.link.burst_seconds_per_byte > 0 ? 1e-6 / d.link.burst_seconds_per_byte : INFINITY,
           1e3 * d.inputs.compute_s, 1e3 * d.inputs.overlap_s,
           d.bytes_across_nodes ? "between nodes" : "all sent");
  for (std::size_t i = 0; i < d.candidates.size(); ++i) {
    const autotune::Candidate& c = d.candidates[i];
    const autotune::Prediction& p = d.choice.predictions[i];
    char drop[32] = "unknown";
    if (c.accuracy_known) std::snprintf(drop, sizeof(drop), "%+.2f pts", -c.accuracy_drop_points);
    log_.log(LogLevel::kInfo,
             "auto:   %-8s %12.0f B/step %4.0f calls  codec %7.2f ms  exchange %8.2f ms %s "
             "(last bucket %7.2f)  step %9.2f ms predicted  accuracy %s: %s",
             c.name.c_str(), c.bytes_per_step, c.collectives_per_step, 1e3 * c.codec_s,
             1e3 * p.work_s, c.exchange_measured() ? "timed   " : "modelled", 1e3 * p.tail_s,
             1e3 * p.step_s, drop, d.choice.verdicts[i].c_str());
  }
  log_.log(LogLevel::kInfo, "auto: chose %s", to_string(d.chosen));
}

}  // namespace gw
