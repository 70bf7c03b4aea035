#include "plugin/auto_strategy.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <thread>

#include "compressors/kind.h"
#include "kernels/stream.h"
#include "plugin/exchange/bucket_exchange.h"
#include "plugin/config/params.h"

namespace gw {
namespace {

namespace keys = config::keys;

// The accuracy cost of each candidate at its defaults, generated from the committed accuracy
// reports by tools/results.py (Note [The auto cost model]).
struct AccuracyEntry {
  const char* candidate;
  std::int64_t parameter;  // powersgd's rank, local_sgd's period; 0 for the others
  double drop_points;
  int seeds;
  const char* strategy;
};
constexpr AccuracyEntry kAccuracy[] = {
#define GW_AUTO_ACCURACY(candidate, parameter, drop, seeds, strategy) \
  AccuracyEntry{candidate, parameter, drop, seeds, strategy},
#include "plugin/auto_accuracy.inc"
#undef GW_AUTO_ACCURACY
};

// The candidates, simplest first: a tie keeps the earlier one (Note [The auto cost model]). The
// last, local SGD, only under GRADWIRE_SYNC=auto.
constexpr const char* kOrder[] = {"none", "fp16", "dgc", "topk", "powersgd", kLocalSgd};

std::vector<std::string> split_names(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::size_t end = comma == std::string::npos ? text.size() : comma;
    out.push_back(text.substr(start, end - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

constexpr char kRestored[] = "restored from a checkpoint";

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Every rank's values replaced by the maximum over the ranks (control traffic, through stream
// memory: an NCCL communicator takes nothing else).
void max_over_ranks(Communicator& comm, std::vector<double>& values,
                    const kernels::Stream& stream) {
  if (values.empty()) return;
  kernels::Buffer<double> buffer;
  double* d = buffer.reserve_discard(values.size(), stream);
  kernels::copy_bytes(d, values.data(), values.size() * sizeof(double), stream);
  stream.synchronize();
  comm.allreduce(d, values.size(), DataType::kFloat64, ReduceOp::kMax, TrafficKind::kControl);
  kernels::copy_bytes(values.data(), d, values.size() * sizeof(double), stream);
  stream.synchronize();
}

}  // namespace

AutoStrategy::AutoStrategy(const config::Config& config, const CompressorSettings& settings,
                           const SyncSettings& sync, const Optimizer& inner,
                           const ParameterSet& params)
    : settings_(settings), sync_(sync), momentum_(inner.sgd_momentum()) {
  max_drop_ = config.get_float(keys::kAutoMaxAccuracyDrop);
  check_steps_ = config.get_int(keys::kAutoCheckSteps);
  const std::string& listed = config.get_string(keys::kAutoCandidates);
  std::vector<std::string> named;
  if (!listed.empty()) {
    named = split_names(listed);
    for (const std::string& name : named) {
      const bool known = std::any_of(std::begin(kOrder), std::end(kOrder),
                                     [&](const char* k) { return name == k; });
      if (!known) {
        throw config::ConfigError(std::string(keys::kAutoCandidates) + "=" + listed + ": '" + name +
                                  "' is nothing auto can choose; accepted: a comma list of none, "
                                  "fp16, dgc, topk, powersgd, local_sgd (or empty: all)");
      }
      if (name == kLocalSgd && !sync.automatic) {
        throw config::ConfigError(std::string(keys::kAutoCandidates) + "=" + listed +
                                  " names local_sgd, which auto chooses only under " + keys::kSync +
                                  "=auto (" + keys::kSync + "=" + config.text(keys::kSync) +
                                  " here)");
      }
    }
  }
  const std::vector<std::size_t> rows = params.rows();
  const bool any_rows = std::any_of(rows.begin(), rows.end(), [](std::size_t r) { return r > 0; });
  for (const char* order : kOrder) {
    const std::string name = order;
    const bool local = name == kLocalSgd;
    if (local && !sync.automatic) continue;
    const bool is_named = std::find(named.begin(), named.end(), name) != named.end();
    if (!named.empty() && !is_named) continue;
    autotune::Candidate c;
    c.name = name;
    c.named = is_named;
    if (name == "none") {
      c.accuracy_known = true;  // the baseline the others are measured against
    }
    const std::int64_t parameter = name == "powersgd"
                                       ? static_cast<std::int64_t>(settings.powersgd.rank)
                                   : local ? sync.policy.period
                                           : 0;
    for (const AccuracyEntry& e : kAccuracy) {
      if (name == e.candidate && parameter == e.parameter) {
        c.accuracy_known = true;
        c.accuracy_drop_points = e.drop_points;
      }
    }
    if (local) c.period = static_cast<double>(sync.policy.period);
    if (name == "dgc" && !momentum_) {
      c.excluded = "needs an SGD inner optimizer (" + inner.name() + " is not)";
    }
    if (local && config.get_string(keys::kGradientReduction) == "sum") {
      c.excluded = "needs " + std::string(keys::kGradientReduction) +
                   "=average (local steps use each rank's own gradient)";
    }
    if (name == "powersgd" && !any_rows) {
      c.excluded = "no parameter was registered with its rows (ParameterSpec::rows)";
    }
    candidates_.push_back(c);
  }
  // Whether any could be chosen depends on nothing measured: refuse now, before anything is sent.
  std::string why;
  for (const autotune::Candidate& c : candidates_) {
    if (!c.excluded.empty()) {
      why += "; " + c.name + ": " + c.excluded;
    } else if (c.accuracy_known && c.accuracy_drop_points > max_drop_) {
      why += "; " + c.name + ": lost " + std::to_string(c.accuracy_drop_points) +
             " points in gradwire's accuracy runs";
    } else if (!c.accuracy_known && !c.named) {
      why += "; " + c.name + ": no accuracy run (name it to allow it)";
    } else {
      return;
    }
  }
  throw config::ConfigError(std::string(keys::kCompressor) +
                            "=auto has no candidate it may choose" + why + ". Widen " +
                            keys::kAutoCandidates + " or raise " + keys::kAutoMaxAccuracyDrop +
                            "=" + config.text(keys::kAutoMaxAccuracyDrop));
}

CompressorSettings AutoStrategy::settings_for(const std::string& name) const {
  CompressorSettings s = settings_;
  s.automatic = false;
  // Local SGD averages the parameters in fp32 (Note [Parameter averaging wire]): no compressor.
  s.kind = name == kLocalSgd ? compressors::Kind::kNone : compressors::parse_kind(name);
  return s;
}

bool AutoStrategy::chose_local_sgd() const { return decision_ && decision_->chosen == kLocalSgd; }

void AutoStrategy::started() {
  started_ = Clock::now();
  last_end_ = started_;
  released_ = false;
}

void AutoStrategy::bucket_released() {
  if (released_) return;
  released_ = true;
  first_release_ = Clock::now();
}

void AutoStrategy::gradients_ready() { ready_ = Clock::now(); }

void AutoStrategy::update_done(double seconds) { update_s_ = seconds; }

void AutoStrategy::step_ended(Communicator& comm, const kernels::Stream& stream,
                              const Logger& log) {
  const Clock::time_point now = Clock::now();
  if (decision_ && !decision_->checked && decision_->how != kRestored) {
    // The step that decided is left out: it ran the probes and trials.
    if (skip_next_) {
      skip_next_ = false;
    } else {
      compute_.push_back(std::chrono::duration<double>(ready_ - last_end_).count());
      overlap_.push_back(released_ ? std::chrono::duration<double>(ready_ - first_release_).count()
                                   : 0.0);
      update_.push_back(update_s_);
      interval_.push_back(std::chrono::duration<double>(now - last_end_).count());
    }
    if (static_cast<std::int64_t>(interval_.size()) >= check_steps_) {
      AutoDecision& d = *decision_;
      d.check_steps = static_cast<std::int64_t>(interval_.size());
      // Local SGD's step is long once every K: the mean holds it, the median would not.
      const bool local = d.candidates[d.choice.chosen].period > 1;
      // The slowest rank's, as at the decision: every rank reaches this step together.
      std::vector<double> medians = {
          median(compute_), median(update_), median(overlap_),
          local ? std::accumulate(interval_.begin(), interval_.end(), 0.0) /
                      static_cast<double>(interval_.size())
                : median(interval_)};
      if (comm.size() > 1) max_over_ranks(comm, medians, stream);
      d.check_inputs.compute_s = medians[0];
      d.check_inputs.update_s = medians[1];
      d.check_inputs.overlap_s = medians[2];
      d.check_inputs.backward_on_host = d.inputs.backward_on_host;
      d.measured_step_s = medians[3];
      d.predicted_step_s =
          autotune::predict(d.link, d.check_inputs, d.candidates[d.choice.chosen]).step_s;
      d.checked = true;
      log.log(LogLevel::kInfo,
              "auto: %s over the %lld steps after the decision (medians, the slowest rank's): "
              "compute %.2f ms, "
              "update %.2f ms, overlap %.2f ms; step %.2f ms measured, %.2f ms predicted "
              "(%+.1f%%)",
              d.chosen.c_str(), static_cast<long long>(d.check_steps),
              1e3 * d.check_inputs.compute_s, 1e3 * d.check_inputs.update_s,
              1e3 * d.check_inputs.overlap_s, 1e3 * d.measured_step_s, 1e3 * d.predicted_step_s,
              d.measured_step_s > 0
                  ? 100.0 * (d.predicted_step_s - d.measured_step_s) / d.measured_step_s
                  : 0.0);
    }
  }
  last_end_ = now;
  released_ = false;
}

CompressorSettings AutoStrategy::restore(const std::string& chosen, std::int64_t step) {
  if (std::none_of(candidates_.begin(), candidates_.end(),
                   [&](const autotune::Candidate& c) { return c.name == chosen; })) {
    throw std::runtime_error("the checkpoint's auto choice '" + chosen +
                             "' is not among this run's candidates (" +
                             std::string(keys::kAutoCandidates) + ")");
  }
  AutoDecision d;
  d.chosen = chosen;
  d.step = step;
  d.how = kRestored;
  d.max_accuracy_drop_points = max_drop_;
  decision_ = d;
  return settings_for(chosen);
}

CompressorSettings AutoStrategy::decide(CountingCommunicator& comm, const ParameterSet& params,
                                        const fusion::BucketPlan& plan, const float* gradients,
                                        std::int64_t step, const Logger& log) {
  const Clock::time_point begin = Clock::now();
  const kernels::Stream& stream = params.stream();
  AutoDecision d;
  d.step = step;
  d.max_accuracy_drop_points = max_drop_;
  d.candidates = candidates_;
  const int n = comm.size();
  Measured measured;
  // From the program's last barrier (or the optimizer's construction), whichever came later: a
  // trainer synchronises its ranks before its first step.
  const Clock::time_point from = std::max(started_, comm.last_barrier_end());
  measured.step.compute_s = std::chrono::duration<double>(ready_ - from).count();
  measured.step.overlap_s =
      released_ ? std::chrono::duration<double>(ready_ - first_release_).count() : 0.0;
  const std::size_t count = candidates_.size();
  for (std::vector<double>* v :
       {&measured.codec_s, &measured.bytes_per_step, &measured.last_codec_s, &measured.last_bytes})
    v->assign(count, 0.0);
  measured.exchange_s.assign(count, -1.0);
  measured.last_exchange_s.assign(count, -1.0);
  if (n == 1) {
    d.how = "one rank";  // nothing to exchange: the choice is the first eligible, by the model
  } else {
    d.how = "measured";
    const Levels* levels = comm.levels();
    const bool across = levels != nullptr && levels->local->size() > 1 && levels->cross->size() > 1;
    d.bytes_across_nodes = across;
    const TrafficCounters before_probes = comm.counters();
    const auto control_bytes = [&] {
      const TrafficCounters now = comm.counters();
      const TrafficCounters::Kind& k = now[TrafficKind::kControl];
      return static_cast<double>(across ? k.inter_node_sent_bytes : k.sent_bytes);
    };
    // The link (Note [Choosing at the first step]).
    comm.barrier();
    kernels::Buffer<float> probe;
    const std::size_t most = std::max(params.numel(), kFirstProbeFloats);
    float* data = probe.reserve_discard(most, stream);
    kernels::copy_bytes(data, gradients, std::min(params.numel(), most) * sizeof(float), stream);
    stream.synchronize();
    std::vector<double> latency(kLatencyProbes);
    for (double& t : latency) {
      const Clock::time_point t0 = Clock::now();
      comm.allreduce(data, 2, DataType::kFloat32, ReduceOp::kSum, TrafficKind::kControl);
      t = seconds_since(t0);
    }
    max_over_ranks(comm, latency, stream);
    const double alpha = median(latency);
    std::this_thread::sleep_for(std::chrono::duration<double>(kRefillSeconds));
    std::int64_t collectives = kLatencyProbes + 1;
    for (std::size_t floats = kFirstProbeFloats;; floats = std::min(most, 2 * floats)) {
      const double bytes_before = control_bytes();
      const Clock::time_point t0 = Clock::now();
      comm.allreduce(data, floats, DataType::kFloat32, ReduceOp::kSum, TrafficKind::kControl);
      std::vector<double> t = {seconds_since(t0)};
      const double bytes = control_bytes() - bytes_before;
      max_over_ranks(comm, t, stream);
      collectives += 2;
      d.probes.push_back({bytes, t[0]});
      if (t[0] >= kProbeSeconds || floats >= most || autotune::probes_settled(alpha, d.probes)) {
        break;
      }
    }
    d.link = autotune::fit_link(alpha, d.probes);
    d.probe_collectives = collectives;
    d.probe_bytes = comm.counters()[TrafficKind::kControl].sent_bytes -
                    before_probes[TrafficKind::kControl].sent_bytes;

    // Each candidate on a copy of the gradients.
    kernels::Buffer<float> scratch;
    float* copy = scratch.reserve_discard(params.numel(), stream);
    const std::vector<compressors::BucketView> views = params.bucket_views(plan, copy);
    const std::size_t nodes = across ? static_cast<std::size_t>(levels->cross->size()) : 0;
    const std::size_t local = across ? static_cast<std::size_t>(levels->local->size()) : 1;
    const std::size_t un = static_cast<std::size_t>(n);
    const auto dense_bytes = [&](std::size_t elements, std::size_t size) {
      if (elements == 0) return 0.0;
      if (across) {
        return static_cast<double>(CountingCommunicator::allreduce_bytes(
            (elements + local - 1) / local, size, levels->cross->rank(), levels->cross->size()));
      }
      return static_cast<double>(
          CountingCommunicator::allreduce_bytes(elements, size, comm.rank(), n));
    };
    // What one bucket's trial sends, and its collectives.
    const auto sent = [&](const ExchangeTrial& t, double& bytes, double& calls) {
      bytes = dense_bytes(t.dense_elements, t.dense_element_size) +
              dense_bytes(t.q_elements, sizeof(float));
      calls = (t.dense_elements > 0 ? 1 : 0) + (t.q_elements > 0 ? 1 : 0);
      const double words = static_cast<double>(t.sparse_words);
      if (t.split && across) {
        // Note [Sparse allreduce over two levels]: steps 3 and 5 cross, 3 W (N - 1) / (N L).
        bytes +=
            4.0 * 3.0 * words * static_cast<double>(nodes - 1) / static_cast<double>(nodes * local);
        calls += 8;
      } else if (t.split) {
        // Note [Sparse allreduce by split]: about 3 W (n - 1) / n.
        bytes += 4.0 * 3.0 * words * static_cast<double>(un - 1) / static_cast<double>(un);
        calls += 4;
      } else if (t.sparse) {
        bytes += 4.0 * words * static_cast<double>(across ? un - local : un - 1);
        calls += 2;
      }
    };
    const std::size_t last = views.size() - 1;
    // Local SGD's averaging is dense's exchange (Note [Parameter averaging wire]): where none is a
    // candidate too (it comes first), local SGD takes its figures rather than measure them again.
    std::size_t dense = count;
    for (std::size_t i = 0; i < count; ++i) {
      if (d.candidates[i].name == "none") dense = i;
    }
    const auto same_as_dense = [&](std::size_t i) {
      return dense < i && d.candidates[i].period > 1;
    };
    std::vector<double> run_exchange(count, 0.0);  // 1: this rank would exchange it for real
    for (std::size_t i = 0; i < count; ++i) {
      autotune::Candidate& c = d.candidates[i];
      if (!c.excluded.empty()) continue;
      if (same_as_dense(i)) {
        for (std::vector<double>* v : {&measured.codec_s, &measured.bytes_per_step,
                                       &measured.last_codec_s, &measured.last_bytes})
          (*v)[i] = (*v)[dense];
        c.collectives_per_step = d.candidates[dense].collectives_per_step;
        c.last_collectives = d.candidates[dense].last_collectives;
        continue;  // and its exchange below, dense's
      }
      auto trial =
          make_trial_compressor(settings_for(c.name), params.numels(), params.rows(), momentum_);
      trial->set_stream(stream);
      trial->begin_step(trial->warmup_end_step());
      BucketExchange exchange;
      std::vector<ExchangeTrial> trials(views.size());
      std::vector<std::vector<double>> codec(views.size());
      // One that may not be chosen is measured once, for its report line.
      const bool eligible = autotune::may_choose(c, max_drop_);
      const int first = eligible ? 1 : 0, passes = eligible ? kTrialPasses : 1;
      for (int pass = 0; pass < first + passes; ++pass) {
        kernels::copy_bytes(copy, gradients, params.numel() * sizeof(float), stream);
        for (std::size_t b = 0; b < views.size(); ++b) {
          trials[b] = exchange.trial(*trial, views[b], n);
          if (pass >= first) codec[b].push_back(trials[b].codec_seconds);
        }
      }
      double calls = 0;
      for (std::size_t b = 0; b < views.size(); ++b) {
        double bytes = 0, bucket_calls = 0;
        sent(trials[b], bytes, bucket_calls);
        const double e = median(codec[b]);
        measured.codec_s[i] += e;
        measured.bytes_per_step[i] += bytes;
        calls += bucket_calls;
        if (b == last) {
          measured.last_codec_s[i] = e;
          measured.last_bytes[i] = bytes;
          c.last_collectives = bucket_calls;
        }
      }
      c.collectives_per_step = calls;
      if (eligible &&
          measured.bytes_per_step[i] * d.link.seconds_per_byte <= kTrialExchangeSeconds) {
        run_exchange[i] = 1;
      }
    }
    // The ranks' byte counts differ a little: every rank exchanges what all of them would.
    std::vector<double> skip(count);
    for (std::size_t i = 0; i < count; ++i) skip[i] = 1.0 - run_exchange[i];
    max_over_ranks(comm, skip, stream);
    for (std::size_t i = 0; i < count; ++i) {
      if (same_as_dense(i)) {
        measured.exchange_s[i] = measured.exchange_s[dense];
        measured.last_exchange_s[i] = measured.last_exchange_s[dense];
        continue;
      }
      if (skip[i] > 0 || !d.candidates[i].excluded.empty()) continue;
      auto trial = make_trial_compressor(settings_for(d.candidates[i].name), params.numels(),
                                         params.rows(), momentum_);
      trial->set_stream(stream);
      const std::int64_t first = trial->warmup_end_step();
      BucketExchange exchange;
      std::vector<std::vector<double>> seconds(views.size());
      for (int pass = 0; pass <= kTrialExchanges; ++pass) {
        trial->begin_step(first + pass);
        kernels::copy_bytes(copy, gradients, params.numel() * sizeof(float), stream);
        stream.synchronize();
        comm.barrier();
        for (std::size_t b = 0; b < views.size(); ++b) {
          const Clock::time_point t0 = Clock::now();
          exchange.run(comm, *trial, views[b], TrafficKind::kControl);
          if (pass > 0) seconds[b].push_back(seconds_since(t0));
        }
      }
      measured.exchange_s[i] = 0;
      for (std::size_t b = 0; b < views.size(); ++b) {
        const double x = median(seconds[b]);
        measured.exchange_s[i] += x;
        if (b == last) measured.last_exchange_s[i] = x;
      }
      d.trial_exchanges += 1 + kTrialExchanges;
    }
  }
  if (inject_measurements) inject_measurements(measured);
  // The slowest rank's inputs: every rank then holds the same (Note [Choosing at the first step]).
  const std::vector<std::vector<double>*> per_candidate = {
      &measured.codec_s,    &measured.bytes_per_step, &measured.last_codec_s,
      &measured.last_bytes, &measured.exchange_s,     &measured.last_exchange_s};
  std::vector<double> inputs = {measured.step.compute_s, measured.step.overlap_s,
                                stream.is_host() ? 1.0 : 0.0};
  for (const std::vector<double>* v : per_candidate) {
    if (v->size() != count) {
      throw std::logic_error("auto: a measured input has " + std::to_string(v->size()) +
                             " values for " + std::to_string(count) + " candidates");
    }
    inputs.insert(inputs.end(), v->begin(), v->end());
  }
  if (n > 1) max_over_ranks(comm, inputs, stream);
  d.inputs.compute_s = inputs[0];
  d.inputs.overlap_s = inputs[1];
  d.inputs.backward_on_host = inputs[2] > 0;  // on any rank: the slowest decides
  for (std::size_t i = 0; i < count; ++i) {
    autotune::Candidate& c = d.candidates[i];
    const auto at = [&](std::size_t v) { return inputs[3 + v * count + i]; };
    c.codec_s = at(0);
    c.bytes_per_step = at(1);
    c.last_codec_s = at(2);
    c.last_bytes = at(3);
    c.exchange_s = at(4);
    c.last_exchange_s = at(5);
  }
  for (autotune::Candidate& c : d.candidates) {
    if (c.period <= 1) continue;
    // Local SGD: what was measured for one averaging, spread over its period.
    for (double* x : {&c.bytes_per_step, &c.collectives_per_step, &c.codec_s, &c.last_bytes,
                      &c.last_collectives, &c.last_codec_s})
      *x /= c.period;
    if (c.exchange_measured()) {
      c.exchange_s /= c.period;
      c.last_exchange_s /= c.period;
    }
  }
  d.choice = autotune::choose(d.link, d.inputs, d.candidates, max_drop_);
  if (n > 1) {
    // Rank 0's choice is every rank's.
    kernels::Buffer<std::int64_t> buffer;
    std::int64_t chosen = static_cast<std::int64_t>(d.choice.chosen);
    std::int64_t* b = buffer.reserve_discard(1, stream);
    kernels::copy_bytes(b, &chosen, sizeof(chosen), stream);
    stream.synchronize();
    comm.broadcast(b, 1, DataType::kInt64, 0, TrafficKind::kControl);
    kernels::copy_bytes(&chosen, b, sizeof(chosen), stream);
    stream.synchronize();
    if (static_cast<std::size_t>(chosen) != d.choice.chosen) {
      d.choice.verdicts[d.choice.chosen] = "slower";
      d.choice.chosen = static_cast<std::size_t>(chosen);
      d.choice.verdicts[d.choice.chosen] = "chosen (rank 0's)";
    }
  }
  d.chosen = d.candidates[d.choice.chosen].name;
  d.measure_seconds = seconds_since(begin);
  decision_ = d;
  skip_next_ = true;
  if (comm.rank() == 0) log_decision(log);
  return settings_for(d.chosen);
}

void AutoStrategy::log_decision(const Logger& log) const {
  const AutoDecision& d = *decision_;
  log.log(LogLevel::kInfo,
          "auto: measured at step %lld in %.3f s (%s): latency %.3f ms; %.3f MB/s sustained, "
          "burst %.0f B at %.1f MB/s; compute %.2f ms, overlap %.2f ms; bytes counted %s",
          static_cast<long long>(d.step), d.measure_seconds, d.how.c_str(), 1e3 * d.link.latency_s,
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
    log.log(LogLevel::kInfo,
            "auto:   %-8s %12.0f B/step %4.0f calls  codec %7.2f ms  exchange %8.2f ms %s "
            "(last bucket %7.2f)  step %9.2f ms predicted  accuracy %s: %s",
            c.name.c_str(), c.bytes_per_step, c.collectives_per_step, 1e3 * c.codec_s,
            1e3 * p.work_s, c.exchange_measured() ? "timed   " : "modelled", 1e3 * p.tail_s,
            1e3 * p.step_s, drop, d.choice.verdicts[i].c_str());
  }
  log.log(LogLevel::kInfo, "auto: chose %s", d.chosen.c_str());
}

}  // namespace gw
