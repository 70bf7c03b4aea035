#include "plugin/distributed_optimizer.h"

#include <algorithm>
#include <chrono>
#include <istream>
#include <optional>
#include <ostream>
#include <stdexcept>

#include "compressors/none_compressor.h"
#include "kernels/elementwise.h"
#include "plugin/compressor_factory.h"
#include "plugin/config/params.h"
#include "plugin/config_check.h"
#include "plugin/optimizer_state_stream.h"

namespace gw {

namespace {

void check_auto_without_amp(const CompressorSettings& compression, const AmpSettings& amp) {
  if (compression.automatic && amp.enabled) {
    throw config::ConfigError(std::string(config::keys::kCompressor) +
                              "=auto does not choose under " + config::keys::kAmp +
                              "=1 yet (mixed precision changes what each candidate sends); "
                              "name a compressor, or set " +
                              config::keys::kAmp + "=0");
  }
}

}  // namespace

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
  CompressorSettings compression = read_compressor_settings(config_);
  compression.sparsify.dense_fallback = options.sparse_dense_fallback;
  const SyncSettings sync = read_sync_settings(config_);
  check_sync_supports(sync, *inner_);
  // How parameters travel at averaging points: local SGD sends fp16 deltas when
  // GRADWIRE_COMPRESSOR=fp16 asks for it (not AMP's wire); diloco sends its pseudo-gradients
  // through the configured compressor, and its gradients never travel (Note [DiLoCo]).
  const CompressorSettings averaging = compression;
  if (sync.policy.mode == sync_policies::SyncMode::kDiloco) {
    compression.kind = compressors::Kind::kNone;
  }
  const AmpSettings amp = read_amp_settings(config_);
  check_auto_without_amp(compression, amp);
  compression.kind = gradient_compressor(compression.kind, amp);
  amp_ = AmpStep(amp, compression.kind);
  params_ = ParameterSet(std::move(params), options.stream);
  comm_stream_ = options.stream.is_host() ? kernels::Stream::host()
                                          : kernels::Stream::cuda(options.stream.cuda_device());
  scale_ = GradientScale(config_.get_string(config::keys::kGradientReduction) == "average",
                         params_.size(), comm_->size());
  accumulation_ =
      GradientAccumulation(static_cast<int>(config_.get_int(config::keys::kAccumulationSteps)),
                           scale_.average(), params_.numel(), params_.stream());

  // Tensor fusion (Note [Buckets in the step]).
  const double threshold_mib = config_.get_float(config::keys::kFusionThresholdMb);
  fusion::BucketPlan plan =
      fusion::plan_buckets(params_.numels(), fusion::threshold_bytes_from_mib(threshold_mib));
  std::vector<compressors::BucketView> views = params_.bucket_views(plan, params_.gradients());
  buckets_ = StepBuckets(std::move(plan), std::move(views));
  timeline_ = StepTimeline(buckets_.size());
  failure_.inject = options.inject_engine_failure;
  local_sgd_ = std::make_unique<LocalSgdAveraging>(
      sync,
      make_averaging_wire(averaging, sync.policy.mode, params_.numels(), params_.rows(), *inner_),
      *comm_, *inner_, params_, buckets_.plan, comm_stream_);

  if (compression.automatic) {
    // Until step 0 decides (Note [Choosing at the first step]), a compressor that keeps no state.
    auto_ = std::make_unique<AutoStrategy>(
        config_, compression, sync, *inner_, params_, *comm_,
        comm_->rank() == 0 ? log_ : Logger(LogLevel::kError, comm_->rank()));
    auto_->inject_measurements = options.inject_auto_measurements;
  }
  install_compressor(compression);
  compression_.set_dense_bytes_per_step(CountingCommunicator::allreduce_bytes(
      params_.numel(), sizeof(float), comm_->rank(), comm_->size()));

  // The timeline is rank-local (each rank may name its own file, or none), so opening it can fail
  // on some ranks only: the ranks agree on it before going on (Note [Ending the job on an error]).
  const std::string& timeline_file = config_.get_string(config::keys::kTimeline);
  agree_on_startup_errors(*comm_, [&] {
    if (!timeline_file.empty())
      timeline_.open(timeline_file, comm_->rank(), buckets_.plan, params_, comm_stream_);
  });

  check_same_on_all_ranks(*comm_, config_.canonical() + params_.layout_canonical());
  if (config_.get_bool(config::keys::kBroadcastParameters)) broadcast_parameters();
  engines_.buckets =
      std::make_unique<Engine>([this](std::size_t b) { run_job(b); }, buckets_.size());
  if (local_sgd_->streaming()) start_fragment_engine();
  observers_.add(&timeline_);
  if (auto_) observers_.add(auto_.get());
  if (comm_->rank() == 0) log_startup(threshold_mib);
  observers_.restarted();
}

void DistributedOptimizer::install_compressor(const CompressorSettings& settings) {
  compressor_ = make_compressor(settings, params_.numels(), params_.rows(), *inner_);
  compressor_->set_stream(comm_stream_);
  compression_.installed(*compressor_, auto_ && !auto_->decided() ? "auto" : compressor_->name(),
                         steps_);
}

std::string DistributedOptimizer::gradient_wire() const {
  if (auto_ && !auto_->decided()) return "chosen at step 0 (auto)";
  switch (compressor_->kind()) {
    case compressors::Kind::kNone:
      return "fp32";
    case compressors::Kind::kFp16:
      return "fp16";
    case compressors::Kind::kPowerSgd:
      return "low-rank factors";
    default:
      return "sparse";
  }
}

void DistributedOptimizer::decide_auto() {
  install_compressor(auto_->decide(params_, buckets_.plan, params_.gradients(), steps_));
  if (auto_->chose_local_sgd()) switch_to_local_sgd();
  compression_.restart_bytes(comm_->counters()[TrafficKind::kGradient].sent_bytes);
}

void DistributedOptimizer::switch_to_local_sgd() {
  // Nothing was averaged or exchanged yet: the policy starts from step 0 as a fixed one would.
  local_sgd_ = std::make_unique<LocalSgdAveraging>(
      auto_->local_sgd_settings(), std::make_unique<compressors::NoneCompressor>(), *comm_, *inner_,
      params_, buckets_.plan, comm_stream_);
}

void DistributedOptimizer::log_startup(double threshold_mib) const {
  log_.log(LogLevel::kInfo,
           "%zu parameters (%zu floats, %.2f MB) in one flat gradient buffer, %s (fusion "
           "threshold %g MiB); %d ranks; inner optimizer %s; compressor %s; gradients %s over "
           "ranks; sync %s%s%s",
           params_.size(), params_.numel(), params_.numel() * 4 / 1e6,
           buckets_.plan.describe(sizeof(float)).c_str(), threshold_mib, comm_->size(),
           inner_->name().c_str(), compression_.stats().compressor.c_str(),
           scale_.average() ? "averaged" : "summed", local_sgd_->policy().name().c_str(),
           amp_.describe(gradient_wire()).c_str(),
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
  if (buckets_.tracker.is_marked(i)) {
    throw std::logic_error("gradient_ready: parameter '" + params_[i].spec.name +
                           "' reported ready twice in step " + std::to_string(steps_) +
                           (accumulation_.on() ? ", " + accumulation_.where() : ""));
  }
  fold_pass(i);
  if (!accumulation_.last()) {  // Note [Gradient accumulation]: nothing leaves this pass
    buckets_.tracker.mark_ready(i);
    return;
  }
  if (buckets_.tracker.none_marked()) begin_gradients();
  launch_released(buckets_.tracker.mark_ready(i));
}

void DistributedOptimizer::fold_pass(std::size_t i) {
  accumulation_.fold(params_.gradient(i), params_[i].offset, params_[i].spec.numel,
                     params_.stream());
}

std::string DistributedOptimizer::unmarked_parameters() const {
  std::string missing;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (!buckets_.tracker.is_marked(i)) {
      missing += (missing.empty() ? "" : ", ") + params_[i].spec.name;
    }
  }
  return missing;
}

void DistributedOptimizer::end_pass() {
  fusion::LaunchTracker& tracker = buckets_.tracker;
  if (tracker.none_marked()) {
    for (std::size_t i = 0; i < params_.size(); ++i) fold_pass(i);
  } else if (!tracker.all_marked()) {
    const std::string missing = unmarked_parameters();
    tracker.reset();
    throw std::logic_error("step " + std::to_string(steps_) + ", " + accumulation_.where() +
                           ": gradient_ready was not called for: " + missing);
  }
  tracker.reset();
  observers_.pass_ended(steps_, accumulation_.pass(), accumulation_.passes());
  accumulation_.next_pass();
  facts_.loss_reported = false;
}

void DistributedOptimizer::begin_gradients() {
  observers_.gradients_begin(params_.stream());
  buckets_.span.timed = false;
  if (compression_.counts_from(steps_)) {
    compression_.restart_bytes(comm_->counters()[TrafficKind::kGradient].sent_bytes);
  }
  StepFacts::Gradients& g = facts_.gradients;
  g = StepFacts::Gradients{};
  g.exchanging = local_sgd_->exchanges_gradients(steps_);
  buckets_.run_order.clear();
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

void DistributedOptimizer::collect_gradients() {
  throw_if_failed();
  observers_.gradients_ready();
  const StepClock::time_point wait_begin = StepClock::now();
  fusion::LaunchTracker& tracker = buckets_.tracker;
  if (tracker.none_marked()) {
    for (std::size_t i = 0; i < params_.size(); ++i) fold_pass(i);
    begin_gradients();
    launch_released(tracker.mark_all());
  } else if (!tracker.all_marked()) {
    const std::string missing = unmarked_parameters();
    wait_engine();
    tracker.reset();
    throw std::logic_error("step " + std::to_string(steps_) +
                           ": gradient_ready was not called for: " + missing);
  }
  wait_engine();
  tracker.reset();
  StepFacts::Gradients& g = facts_.gradients;
  if (g.job == Job::kCheck) {
    // Before the exchange (Note [Mixed precision in the step]): one vote, then the exchange.
    g.overflow = AmpStep::any_rank_overflowed(*comm_, g.job_overflow);
    if (!g.overflow && g.exchanging) exchange_all_buckets();
  } else if (g.job == Job::kExchange && amp_.enabled()) {
    g.overflow = g.job_overflow;  // checked after the exchange, the same bits on every rank
  } else if (g.auto_pending) {
    decide_auto();
    g.exchanging = local_sgd_->exchanges_gradients(steps_);
    if (g.exchanging) exchange_all_buckets();
  }
  // Every job has synchronised the communication stream: the events are complete.
  buckets_.span.close(g.job == Job::kExchange);
  if (g.job == Job::kExchange) {
    local_sgd_->count_gradient_exchange();
    g.exchanged = true;
    if (log_.enabled(LogLevel::kDebug)) log_exchange(wait_begin);
  }
  // A local step: this rank's own gradient is what the inner optimizer uses, unscaled.
  if (!g.exchanging) scale_.all_at_target();
}

void DistributedOptimizer::exchange_all_buckets() {
  compressor_->begin_step(steps_);
  facts_.gradients.job = Job::kExchange;
  launch_all();
  wait_engine();
}

void DistributedOptimizer::log_exchange(StepClock::time_point wait_begin) const {
  const StepFacts::Gradients& g = facts_.gradients;
  const double ms =
      std::chrono::duration<double, std::milli>(StepClock::now() - wait_begin).count();
  log_.log(LogLevel::kDebug,
           "step %lld: %s exchange of %zu floats in %zu buckets; step() waited %.3f ms for "
           "them (%zu dense, %zu sparse tensors%s)",
           static_cast<long long>(steps_), compressor_->name().c_str(), params_.numel(),
           buckets_.size(), ms, g.dense_tensors, g.sparse_tensors,
           g.dense_fallback ? ", dense fallback" : "");
}

void DistributedOptimizer::synchronize_gradients() {
  if (!accumulation_.last()) {
    throw std::logic_error("synchronize_gradients: in " + accumulation_.where() +
                           ", before the last (only the last exchanges)");
  }
  collect_gradients();
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const float scale = scale_.needed(i);
    if (scale != 1.0f) {
      kernels::scale(params_.gradient(i), scale, params_[i].spec.numel, comm_stream_);
    }
    scale_.set(i, scale_.target());
  }
  comm_stream_.synchronize();
  facts_.synchronized = true;
}

void DistributedOptimizer::report_loss(double loss) {
  if (facts_.loss_reported) {
    throw std::logic_error("report_loss: called twice in step " + std::to_string(steps_));
  }
  facts_.loss_reported = true;
  // Under gradient accumulation, the mean over the step's backward passes.
  const double mean = accumulation_.add_loss(loss);
  if (accumulation_.last()) local_sgd_->add_loss(steps_, mean);
}

void DistributedOptimizer::update(bool local, StepEnd& end) {
  std::vector<ParameterView>& views = params_.views();
  for (std::size_t i = 0; i < views.size(); ++i) views[i].grad_scale = scale_.needed(i);
  end.skipped = facts_.gradients.overflow;
  amp_.finish_step(steps_, end.skipped, log_);
  local_sgd_->before_update(local);
  end.update_begin = observers_.now();
  if (!end.skipped) inner_->step(views);
  end.update_end = observers_.now();
}

void DistributedOptimizer::step() {
  throw_if_failed();
  if (!accumulation_.last()) {
    end_pass();
    return;
  }
  const bool local = !local_sgd_->exchanges_gradients(steps_);
  local_sgd_->check_loss_reported(steps_, facts_.loss_reported);
  StepEnd end;
  end.wait_begin = observers_.now();
  if (!facts_.synchronized) {
    if (inner_->accepts_gradient_scale()) {
      collect_gradients();
    } else {
      synchronize_gradients();
    }
  }
  end.wait_end = observers_.now();
  update(local, end);
  if (facts_.gradients.exchanged) {
    compression_.step_exchanged(steps_, comm_->counters()[TrafficKind::kGradient].sent_bytes);
  }
  end.end = observers_.now();
  if (local_sgd_->streaming()) {
    local_sgd_->stream_after(steps_, log_);  // Note [Streaming DiLoCo]
  } else if (local_sgd_->averages_after(steps_)) {
    average_parameters(/*scheduled=*/true);
  }
  end.step = steps_++;
  facts_ = StepFacts{};
  accumulation_.step_ended();
  observers_.step_ended(end);
}

void DistributedOptimizer::check_between_steps(const char* what) const {
  throw_if_failed();
  if (accumulation_.part_way()) {
    throw std::logic_error(std::string("DistributedOptimizer::") + what + ": called in " +
                           accumulation_.where() + ", inside an optimizer step");
  }
  if (!buckets_.tracker.none_marked()) {
    throw std::logic_error(std::string("DistributedOptimizer::") + what +
                           ": called after gradient_ready and before step() (buckets may be in "
                           "flight on the engine thread)");
  }
}

void DistributedOptimizer::synchronize_parameters() {
  check_between_steps("synchronize_parameters");
  if (local_sgd_->local_steps_since_average() == 0) return;
  if (local_sgd_->streaming()) {
    local_sgd_->stream_all(steps_ - 1, log_);
    return;
  }
  average_parameters(/*scheduled=*/false);
}

bool DistributedOptimizer::use_global_parameters() {
  check_between_steps("use_global_parameters");
  return local_sgd_->use_global();
}

void DistributedOptimizer::restore_own_parameters() {
  check_between_steps("restore_own_parameters");
  local_sgd_->restore_own();
}

void DistributedOptimizer::average_parameters(bool scheduled) {
  // Bucket by bucket on the engine (Note [Parameter averaging wire]).
  facts_.gradients.job = Job::kAverageParameters;
  local_sgd_->begin_point();
  launch_all();
  wait_engine();
  // A scheduled point runs inside step() before the count advances; a requested one after it.
  local_sgd_->finish_point(scheduled ? steps_ : steps_ - 1, scheduled, log_);
}

void DistributedOptimizer::save_state(std::ostream& out) const {
  check_between_steps("save_state");
  if (auto_) auto_->save_choice(out);
  write_optimizer_state(out, steps_, *compressor_, *inner_, *local_sgd_, amp_.scaler());
}

void DistributedOptimizer::load_state(std::istream& in) {
  check_between_steps("load_state");
  if (auto_) {
    if (const std::optional<CompressorSettings> chosen = auto_->load_choice(in)) {
      install_compressor(*chosen);
      if (auto_->chose_local_sgd()) switch_to_local_sgd();  // before its state is read
    }
  }
  steps_ = read_optimizer_state(in, *compressor_, *inner_, *local_sgd_, amp_.scaler());
  facts_ = StepFacts{};
  // Per-step figures of a resumed run start at the resume point.
  compression_.resumed(steps_);
  if (auto_) auto_->restarted();
}

void DistributedOptimizer::broadcast_parameters() {
  check_between_steps("broadcast_parameters");
  params_.broadcast_from_rank0(*comm_);
}

}  // namespace gw
