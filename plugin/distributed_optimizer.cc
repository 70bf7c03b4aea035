#include "plugin/distributed_optimizer.h"

#include <algorithm>
#include <chrono>
#include <istream>
#include <optional>
#include <ostream>
#include <stdexcept>

#include "kernels/elementwise.h"
#include "plugin/compressor_factory.h"
#include "plugin/config/params.h"
#include "plugin/config_check.h"
#include "plugin/optimizer_state_stream.h"

namespace gw {

DistributedOptimizer::DistributedOptimizer(std::shared_ptr<CountingCommunicator> comm,
                                           std::unique_ptr<Optimizer> inner,
                                           std::vector<ParameterSpec> params, Options options)
    : comm_(std::move(comm)),
      inner_(std::move(inner)),
      config_(std::move(options.config)),
      log_(LogLevel::kInfo, 0) {
  // Everything local is validated before the first collective.
  if (options.read_environment) config_.apply_process_environment();
  if (!comm_) throw std::invalid_argument("DistributedOptimizer: communicator is null");
  log_ = Logger(parse_log_level(config_.get_string(config::keys::kLogLevel)), comm_->rank());
  if (!inner_) throw std::invalid_argument("DistributedOptimizer: inner optimizer is null");
  if (params.empty()) throw std::invalid_argument("DistributedOptimizer: no parameters");
  average_ = config_.get_string(config::keys::kGradientReduction) == "average";
  CompressorSettings compression = read_compressor_settings(config_);
  compression.sparsify.dense_fallback = options.sparse_dense_fallback;
  const SyncSettings sync = read_sync_settings(config_);
  check_sync_supports(sync, *inner_);
  // Local SGD sends fp16 deltas when GRADWIRE_COMPRESSOR=fp16 asks for it, not AMP's wire.
  const bool fp16_deltas = compression.kind == compressors::Kind::kFp16;
  const AmpSettings amp = read_amp_settings(config_);
  if (compression.automatic && amp.enabled) {
    throw config::ConfigError(std::string(config::keys::kCompressor) +
                              "=auto does not choose under " + config::keys::kAmp +
                              "=1 yet (mixed precision changes what each candidate sends); "
                              "name a compressor, or set " +
                              config::keys::kAmp + "=0");
  }
  compression.kind = gradient_compressor(compression.kind, amp);
  amp_ = AmpStep(amp, compression.kind);
  params_ = ParameterSet(std::move(params), options.stream);
  comm_stream_ = options.stream.is_host() ? kernels::Stream::host()
                                          : kernels::Stream::cuda(options.stream.cuda_device());
  multiplier_.assign(params_.size(), 1.0f);

  // Tensor fusion (Note [Buckets in the step]).
  const double threshold_mib = config_.get_float(config::keys::kFusionThresholdMb);
  plan_ = fusion::plan_buckets(params_.numels(), fusion::threshold_bytes_from_mib(threshold_mib));
  buckets_ = params_.bucket_views(plan_, params_.gradients());
  exchanges_.resize(plan_.size());
  bucket_ready_.resize(plan_.size());
  tracker_ = fusion::LaunchTracker(plan_);
  timeline_ = StepTimeline(plan_.size());
  run_order_.reserve(2 * plan_.size());
  inject_ = options.inject_engine_failure;
  local_sgd_ = std::make_unique<LocalSgdAveraging>(sync, fp16_deltas, *comm_, *inner_, params_,
                                                   plan_, comm_stream_);

  if (compression.automatic) {
    // Until step 0 decides (Note [Choosing at the first step]), a compressor that keeps no state.
    auto_ = std::make_unique<AutoStrategy>(config_, compression, sync, *inner_, params_);
    auto_->inject_measurements = options.inject_auto_measurements;
  }
  install_compressor(compression);
  if (auto_) gradient_wire_ = "chosen at step 0 (auto)";
  stats_.dense_bytes_per_step = CountingCommunicator::allreduce_bytes(
      params_.numel(), sizeof(float), comm_->rank(), comm_->size());

  // The timeline is rank-local (each rank may name its own file, or none), so opening it can fail
  // on some ranks only: the ranks agree on it before going on (Note [Ending the job on an error]).
  const std::string& timeline_file = config_.get_string(config::keys::kTimeline);
  agree_on_startup_errors(*comm_, [&] {
    if (!timeline_file.empty())
      timeline_.open(timeline_file, comm_->rank(), plan_, params_, comm_stream_);
  });

  check_same_on_all_ranks(*comm_, config_.canonical() + params_.layout_canonical());
  if (config_.get_bool(config::keys::kBroadcastParameters)) broadcast_parameters();
  engine_ = std::make_unique<Engine>([this](std::size_t b) { run_job(b); }, plan_.size());
  timeline_.restart();
  if (comm_->rank() == 0) log_startup(threshold_mib);
  if (auto_) auto_->started();
}

void DistributedOptimizer::install_compressor(const CompressorSettings& settings) {
  compressor_ = make_compressor(settings, params_.numels(), params_.rows(), *inner_);
  compressor_->set_stream(comm_stream_);
  stats_.compressor = auto_ && !auto_->decided() ? "auto" : compressor_->name();
  stats_.warmup_end_step = compressor_->warmup_end_step();
  measure_from_step_ = std::max(stats_.warmup_end_step, steps_);
  gradient_wire_ = settings.kind == compressors::Kind::kNone       ? "fp32"
                   : settings.kind == compressors::Kind::kFp16     ? "fp16"
                   : settings.kind == compressors::Kind::kPowerSgd ? "low-rank factors"
                                                                   : "sparse";
}

void DistributedOptimizer::decide_auto() {
  const Logger silent(LogLevel::kError, comm_->rank());
  const CompressorSettings chosen = auto_->decide(*comm_, params_, plan_, params_.gradients(),
                                                  steps_, comm_->rank() == 0 ? log_ : silent);
  install_compressor(chosen);
  if (auto_->chose_local_sgd()) switch_to_local_sgd();
  bytes_at_warmup_end_ = comm_->counters()[TrafficKind::kGradient].sent_bytes;
}

void DistributedOptimizer::switch_to_local_sgd() {
  // Nothing was averaged or exchanged yet: the policy starts from step 0 as a fixed one would.
  local_sgd_ = std::make_unique<LocalSgdAveraging>(auto_->local_sgd_settings(),
                                                   /*fp16_deltas=*/false, *comm_, *inner_, params_,
                                                   plan_, comm_stream_);
}

void DistributedOptimizer::log_startup(double threshold_mib) const {
  log_.log(LogLevel::kInfo,
           "%zu parameters (%zu floats, %.2f MB) in one flat gradient buffer, %s (fusion "
           "threshold %g MiB); %d ranks; inner optimizer %s; compressor %s; gradients %s over "
           "ranks; sync %s%s%s",
           params_.size(), params_.numel(), params_.numel() * 4 / 1e6,
           plan_.describe(sizeof(float)).c_str(), threshold_mib, comm_->size(),
           inner_->name().c_str(), stats_.compressor.c_str(), average_ ? "averaged" : "summed",
           local_sgd_->policy().name().c_str(), amp_.describe(gradient_wire_).c_str(),
           timeline_.on() ? ("; timeline " + timeline_.path()).c_str() : "");
}

float* DistributedOptimizer::gradient(std::size_t i) {
  if (i >= params_.size()) {
    throw std::out_of_range("DistributedOptimizer::gradient: parameter index " + std::to_string(i) +
                            " of " + std::to_string(params_.size()));
  }
  return params_.gradient(i);
}

std::vector<float*> DistributedOptimizer::gradient_views() {
  std::vector<float*> out;
  out.reserve(params_.size());
  for (std::size_t i = 0; i < params_.size(); ++i) out.push_back(gradient(i));
  return out;
}

void DistributedOptimizer::gradient_ready(std::size_t i) {
  throw_if_failed();
  if (i >= params_.size()) {
    throw std::logic_error("gradient_ready: parameter index " + std::to_string(i) + " of " +
                           std::to_string(params_.size()));
  }
  if (tracker_.is_marked(i)) {
    throw std::logic_error("gradient_ready: parameter '" + params_[i].spec.name +
                           "' reported ready twice in step " + std::to_string(steps_));
  }
  if (tracker_.none_marked()) begin_gradients();
  launch_released(tracker_.mark_ready(i));
}

void DistributedOptimizer::begin_gradients() {
  timeline_.gradients_begin(params_.stream());
  exchange_timed_ = false;
  if (steps_ == measure_from_step_) {
    bytes_at_warmup_end_ = comm_->counters()[TrafficKind::kGradient].sent_bytes;
  }
  StepFacts::Gradients& g = facts_.gradients;
  g = StepFacts::Gradients{};
  g.exchanging = local_sgd_->exchanges_gradients(steps_);
  run_order_.clear();
  if (amp_.checks_before_exchange(g.exchanging)) {
    g.job = Job::kCheck;  // each rank checks its own gradients first
  } else if (g.exchanging && auto_ && !auto_->decided()) {
    g.job = Job::kNone;  // nothing leaves before auto has chosen (collect_gradients)
    g.auto_pending = true;
  } else if (g.exchanging) {
    compressor_->begin_step(steps_);
    g.job = Job::kExchange;
  } else {
    g.job = Job::kNone;  // a local step without AMP: nothing to do per bucket
  }
}

void DistributedOptimizer::launch_released(std::size_t count) {
  if (count > 0 && auto_) auto_->bucket_released();
  if (count == 0) return;
  const std::size_t end = tracker_.released();
  // Recorded even when no job runs now: auto's first step runs its exchanges after collect.
  for (std::size_t b = end - count; b < end; ++b) timeline_.released(b, params_.stream());
  if (facts_.gradients.job == Job::kNone) return;
  for (std::size_t b = end - count; b < end; ++b) {
    bucket_ready_[b].record(params_.stream());
    // A bucket's job failed while backward went on (Note [Engine threads]): report it here.
    if (!engine_->launch(b)) {
      wait_engine();  // throws the failure
      throw std::logic_error(
          "DistributedOptimizer: the engine refused a bucket but reported no "
          "failure");
    }
  }
}

void DistributedOptimizer::launch_all() {
  for (std::size_t b = 0; b < plan_.size(); ++b) {
    bucket_ready_[b].record(params_.stream());
    if (!engine_->launch(b)) return;  // a job failed: the wait_engine() that follows reports it
  }
}

void DistributedOptimizer::run_job(std::size_t b) {
  const Job job = facts_.gradients.job;
  StepTimeline::BucketTimes& t = timeline_.bucket(b);
  if (job != Job::kAverageParameters) run_order_.push_back(b);
  if (inject_.step == steps_ && inject_.bucket == b &&
      (inject_.rank < 0 || inject_.rank == comm_->rank())) {
    throw std::runtime_error("injected failure (test)");
  }
  // The bucket's data was written on the program's stream (Note [The step on a device]).
  comm_stream_.make_current();
  bucket_ready_[b].make_wait(comm_stream_);
  switch (job) {
    case Job::kExchange:
      timeline_.mark(t.started, comm_stream_);
      if (!exchange_timed_) exchange_begin_.record(comm_stream_);
      exchange_timed_ = true;
      exchange_bucket(b);
      exchange_end_.record(comm_stream_);
      t.exchange_ran = true;
      if (amp_.checks_after_exchange(true)) check_bucket(b);
      break;
    case Job::kCheck:
      check_bucket(b);
      break;
    case Job::kAverageParameters:
      timeline_.mark(t.average_begin, comm_stream_);
      local_sgd_->average_bucket(b);
      timeline_.mark(t.average_end, comm_stream_);
      t.average_ran = true;
      break;
    case Job::kNone:
      break;
  }
}

void DistributedOptimizer::check_bucket(std::size_t b) {
  StepTimeline::BucketTimes& t = timeline_.bucket(b);
  timeline_.mark(t.check_begin, comm_stream_);
  if (!amp_.unscale_and_check(buckets_[b], comm_stream_)) facts_.gradients.job_overflow = true;
  timeline_.mark(t.check_end, comm_stream_);
  t.check_ran = true;
}

void DistributedOptimizer::exchange_bucket(std::size_t b) {
  const compressors::BucketView& bucket = buckets_[b];
  const compressors::ExchangePlan& plan = exchanges_[b].run(
      *comm_, *compressor_, bucket, TrafficKind::kGradient, timeline_.exchange_times(b));
  const float inv_n = 1.0f / static_cast<float>(comm_->size());
  const bool average_wire = plan.dense_wire == compressors::DenseWire::kFloat16;
  for (std::size_t pos : plan.dense) {
    multiplier_[bucket.tensors[pos].parameter] = average_wire ? inv_n : 1.0f;
  }
  for (std::size_t pos : plan.sparse) multiplier_[bucket.tensors[pos].parameter] = 1.0f;
  for (std::size_t pos : plan.low_rank) multiplier_[bucket.tensors[pos].parameter] = 1.0f;
  if (!plan.sparse.empty()) ++stats_.sparse_exchanges;
  if (plan.dense_fallback) ++stats_.dense_fallbacks;
  StepFacts::Gradients& g = facts_.gradients;
  g.dense_tensors += plan.dense.size();
  g.sparse_tensors += plan.sparse.size();
  g.dense_fallback = g.dense_fallback || plan.dense_fallback;
}

void DistributedOptimizer::wait_engine() {
  const std::optional<Engine::Failure> failure = engine_->wait();
  if (!failure) return;
  const fusion::Bucket& b = plan_.buckets[failure->bucket];
  const std::string context = "gradwire engine on rank " + std::to_string(comm_->rank()) +
                              ", step " + std::to_string(steps_) + ", bucket " +
                              std::to_string(b.index) + " of " + std::to_string(plan_.size()) +
                              " (" + params_.bucket_names(b) + "): ";
  tracker_.reset();
  // Keep the exception's type (a malformed peer payload stays a PayloadError), with the context.
  try {
    std::rethrow_exception(failure->error);
  } catch (const compressors::PayloadError& e) {
    failure_ = context + e.what();
    throw compressors::PayloadError(failure_);
  } catch (const CommError& e) {
    failure_ = context + e.what();
    throw CommError(failure_);
  } catch (const std::exception& e) {
    failure_ = context + e.what();
    throw std::runtime_error(failure_);
  } catch (...) {
    failure_ = context + "unknown exception";
    throw std::runtime_error(failure_);
  }
}

void DistributedOptimizer::throw_if_failed() const {
  if (!failure_.empty()) {
    throw std::runtime_error("DistributedOptimizer: unusable after an engine failure (" + failure_ +
                             ")");
  }
}

float DistributedOptimizer::target_multiplier() const {
  return average_ ? 1.0f / static_cast<float>(comm_->size()) : 1.0f;
}

void DistributedOptimizer::collect_gradients() {
  throw_if_failed();
  if (auto_) auto_->gradients_ready();
  const auto wait_begin = std::chrono::steady_clock::now();
  if (tracker_.none_marked()) {
    begin_gradients();
    launch_released(tracker_.mark_all());
  } else if (!tracker_.all_marked()) {
    std::string missing;
    for (std::size_t i = 0; i < params_.size(); ++i) {
      if (!tracker_.is_marked(i)) missing += (missing.empty() ? "" : ", ") + params_[i].spec.name;
    }
    wait_engine();
    tracker_.reset();
    throw std::logic_error("step " + std::to_string(steps_) +
                           ": gradient_ready was not called for: " + missing);
  }
  wait_engine();
  tracker_.reset();
  StepFacts::Gradients& g = facts_.gradients;
  if (g.job == Job::kCheck) {
    // Before the exchange (Note [Mixed precision in the step]): one vote, then the exchange.
    g.overflow = AmpStep::any_rank_overflowed(*comm_, g.job_overflow);
    if (!g.overflow && g.exchanging) {
      compressor_->begin_step(steps_);
      g.job = Job::kExchange;
      launch_all();
      wait_engine();
    }
  } else if (g.job == Job::kExchange && amp_.enabled()) {
    g.overflow = g.job_overflow;  // checked after the exchange, the same bits on every rank
  } else if (g.auto_pending) {
    decide_auto();
    g.exchanging = local_sgd_->exchanges_gradients(steps_);
    if (g.exchanging) {
      compressor_->begin_step(steps_);
      g.job = Job::kExchange;
      launch_all();
      wait_engine();
    }
  }
  // Every job has synchronised the communication stream: the events are complete.
  last_exchange_ms_ = g.job == Job::kExchange && exchange_timed_
                          ? exchange_end_.elapsed_ms_since(exchange_begin_)
                          : 0.0;
  if (g.job == Job::kExchange) {
    local_sgd_->count_gradient_exchange();
    g.exchanged = true;
    if (log_.enabled(LogLevel::kDebug)) {
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wait_begin)
              .count();
      log_.log(LogLevel::kDebug,
               "step %lld: %s exchange of %zu floats in %zu buckets; step() waited %.3f ms for "
               "them (%zu dense, %zu sparse tensors%s)",
               static_cast<long long>(steps_), compressor_->name().c_str(), params_.numel(),
               plan_.size(), ms, g.dense_tensors, g.sparse_tensors,
               g.dense_fallback ? ", dense fallback" : "");
    }
  }
  if (!g.exchanging) {
    // A local step: this rank's own gradient is what the inner optimizer uses, unscaled.
    std::fill(multiplier_.begin(), multiplier_.end(), target_multiplier());
  }
}

float DistributedOptimizer::needed_scale(std::size_t i) const {
  // See Note [Who divides by the world size].
  const float target = target_multiplier();
  return multiplier_[i] == target ? 1.0f : target / multiplier_[i];
}

void DistributedOptimizer::synchronize_gradients() {
  collect_gradients();
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const float scale = needed_scale(i);
    if (scale != 1.0f) {
      kernels::scale(params_.gradient(i), scale, params_[i].spec.numel, comm_stream_);
    }
    multiplier_[i] = target_multiplier();
  }
  comm_stream_.synchronize();
  facts_.synchronized = true;
}

void DistributedOptimizer::report_loss(double loss) {
  if (facts_.loss_reported) {
    throw std::logic_error("report_loss: called twice in step " + std::to_string(steps_));
  }
  facts_.loss_reported = true;
  local_sgd_->add_loss(steps_, loss);
}

void DistributedOptimizer::step() {
  throw_if_failed();
  const bool local = !local_sgd_->exchanges_gradients(steps_);
  local_sgd_->check_loss_reported(steps_, facts_.loss_reported);
  const auto wait_begin = timeline_.now();
  if (!facts_.synchronized) {
    if (inner_->accepts_gradient_scale()) {
      collect_gradients();
    } else {
      synchronize_gradients();
    }
  }
  const auto wait_end = timeline_.now();
  std::vector<ParameterView>& views = params_.views();
  for (std::size_t i = 0; i < views.size(); ++i) views[i].grad_scale = needed_scale(i);
  const bool skip = facts_.gradients.overflow;
  amp_.finish_step(steps_, skip, log_);
  local_sgd_->before_update(local);
  if (auto_) {
    // Timed only for auto's check (Note [Choosing at the first step]).
    const auto update_begin = std::chrono::steady_clock::now();
    if (!skip) inner_->step(views);
    auto_->update_done(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - update_begin).count());
  } else if (!skip) {
    inner_->step(views);
  }
  if (facts_.gradients.exchanged) count_compression();
  const auto update_end = timeline_.now();
  if (local_sgd_->averages_after(steps_)) average_parameters(/*scheduled=*/true);
  const std::int64_t step = steps_++;
  timeline_.record_step(step, wait_begin, wait_end, update_end, skip);
  facts_ = StepFacts{};
  if (auto_) {
    auto_->step_ended(*comm_, params_.stream(),
                      comm_->rank() == 0 ? log_ : Logger(LogLevel::kError, 0));
  }
}

void DistributedOptimizer::count_compression() {
  if (steps_ < measure_from_step_) return;
  ++stats_.steps_after_warmup;
  stats_.gradient_bytes_after_warmup =
      comm_->counters()[TrafficKind::kGradient].sent_bytes - bytes_at_warmup_end_;
}

void DistributedOptimizer::check_between_steps(const char* what) const {
  throw_if_failed();
  if (!tracker_.none_marked()) {
    throw std::logic_error(std::string("DistributedOptimizer::") + what +
                           ": called after gradient_ready and before step() (buckets may be in "
                           "flight on the engine thread)");
  }
}

void DistributedOptimizer::synchronize_parameters() {
  check_between_steps("synchronize_parameters");
  if (local_sgd_->local_steps_since_average() == 0) return;
  average_parameters(/*scheduled=*/false);
}

void DistributedOptimizer::average_parameters(bool scheduled) {
  // Bucket by bucket on the engine (Note [Parameter averaging wire]).
  facts_.gradients.job = Job::kAverageParameters;
  launch_all();
  wait_engine();
  // A scheduled point runs inside step() before the count advances; a requested one after it.
  local_sgd_->finish_point(scheduled ? steps_ : steps_ - 1, scheduled, log_);
}

// Note [The auto choice in a checkpoint]
// Under GRADWIRE_COMPRESSOR=auto the compressor's state is the chosen compressor's, so the choice
// goes first, as one line: "gradwire-auto <compressor> <step>" ("-" before step 0 decided). A run
// resumed from it builds that compressor without measuring again, so it continues as the
// straight run would.
void DistributedOptimizer::save_state(std::ostream& out) const {
  check_between_steps("save_state");
  if (auto_) {
    const AutoDecision* d = auto_->decision();
    out << "gradwire-auto " << (d ? d->chosen : "-") << ' ' << (d ? d->step : 0) << '\n';
  }
  write_optimizer_state(out, steps_, *compressor_, *inner_, *local_sgd_, amp_.scaler());
}

void DistributedOptimizer::load_state(std::istream& in) {
  check_between_steps("load_state");
  if (auto_) {
    std::string tag, chosen;
    std::int64_t step = 0;
    in >> tag >> chosen >> step;
    in.get();
    if (!in || tag != "gradwire-auto") {
      throw std::runtime_error(
          "optimizer state: no GRADWIRE_COMPRESSOR=auto choice at its start "
          "(written by a run with another compressor?)");
    }
    if (chosen != "-") {
      if (!auto_->decided()) {
        install_compressor(auto_->restore(chosen, step));
        if (auto_->chose_local_sgd()) switch_to_local_sgd();  // before its state is read
      } else if (auto_->decision()->chosen != chosen) {
        throw std::runtime_error("optimizer state: auto chose " + chosen + ", this run " +
                                 auto_->decision()->chosen);
      }
    }
  }
  steps_ = read_optimizer_state(in, *compressor_, *inner_, *local_sgd_, amp_.scaler());
  facts_ = StepFacts{};
  // Per-step figures of a resumed run start at the resume point.
  measure_from_step_ = std::max(stats_.warmup_end_step, steps_);
  stats_.steps_after_warmup = 0;
  stats_.gradient_bytes_after_warmup = 0;
  if (auto_) auto_->started();
}

void DistributedOptimizer::broadcast_parameters() {
  check_between_steps("broadcast_parameters");
  params_.broadcast_from_rank0(*comm_);
}

}  // namespace gw
