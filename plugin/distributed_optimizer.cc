#include "plugin/distributed_optimizer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <istream>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "common/binary_stream.h"
#include "compressors/fp16_compressor.h"
#include "compressors/none_compressor.h"
#include "kernels/elementwise.h"
#include "plugin/compressor_factory.h"
#include "plugin/config/params.h"
#include "plugin/config_check.h"

namespace gw {

DistributedOptimizer::DistributedOptimizer(std::shared_ptr<CountingCommunicator> comm,
                                           std::unique_ptr<Optimizer> inner,
                                           std::vector<ParameterSpec> params, Options options)
    : comm_(std::move(comm)),
      inner_(std::move(inner)),
      config_(std::move(options.config)),
      log_(LogLevel::kInfo, 0),
      policy_(sync_policies::SyncOptions{}) {
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
  policy_ = sync_policies::SyncPolicy(sync.policy);
  average_state_ = sync.average_state;
  delta_wire_ = compression.name == "fp16";  // GRADWIRE_COMPRESSOR's choice, not AMP's wire
  amp_ = read_amp_settings(config_);
  if (amp_.enabled) {
    // Note [Mixed precision in the step].
    if (amp_.comm_fp16 && compression.name == "none") compression.name = "fp16";
    check_after_exchange_ = compression.name == "none" || compression.name == "fp16";
    scaler_ = std::make_unique<amp::LossScaler>(amp_.scaler);
  }
  gradient_wire_ = compression.name == "none" ? "fp32"
                   : compression.name == "fp16" ? "fp16"
                                                : "sparse";
  sync_stats_.policy = policy_.name();

  std::set<std::string> names;
  std::size_t offset = 0;
  for (auto& p : params) {
    if (p.value == nullptr || p.numel == 0) {
      throw std::invalid_argument("DistributedOptimizer: parameter '" + p.name +
                                  "' has no values (null pointer or zero elements)");
    }
    if (!names.insert(p.name).second) {
      throw std::invalid_argument("DistributedOptimizer: parameter name '" + p.name +
                                  "' registered twice");
    }
    params_.push_back(Registered{std::move(p), offset});
    offset += params_.back().spec.numel;
  }
  flat_gradients_.assign(offset, 0.0f);
  multiplier_.assign(params_.size(), 1.0f);
  views_.reserve(params_.size());
  std::vector<std::size_t> numels;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Registered& p = params_[i];
    views_.push_back(
        ParameterView{p.spec.name, p.spec.value, flat_gradients_.data() + p.offset, p.spec.numel});
    numels.push_back(p.spec.numel);
  }
  parameter_flat_.assign(offset, 0.0f);

  // Tensor fusion (Note [Buckets in the step]).
  const double threshold_mib = config_.get_float(config::keys::kFusionThresholdMb);
  plan_ = fusion::plan_buckets(numels, fusion::threshold_bytes_from_mib(threshold_mib));
  for (const fusion::Bucket& b : plan_.buckets) {
    compressors::BucketView view;
    view.index = b.index;
    view.data = flat_gradients_.data() + b.offset;
    view.numel = b.numel;
    for (std::size_t i = b.begin; i < b.end; ++i) {
      view.tensors.push_back({i, params_[i].offset - b.offset, params_[i].spec.numel});
    }
    buckets_.push_back(view);
    view.data = parameter_flat_.data() + b.offset;
    parameter_buckets_.push_back(std::move(view));
  }
  exchanges_.resize(plan_.size());
  parameter_exchanges_.resize(plan_.size());
  tracker_ = fusion::LaunchTracker(plan_);
  times_.resize(plan_.size());
  run_order_.reserve(2 * plan_.size());
  inject_ = options.inject_engine_failure;

  if (delta_wire_) {
    parameter_compressor_ = std::make_unique<compressors::Fp16Compressor>();
  } else {
    parameter_compressor_ = std::make_unique<compressors::NoneCompressor>();
  }
  compressor_ = make_compressor(compression, std::move(numels), *inner_);
  stats_.compressor = compressor_->name();
  stats_.warmup_end_step = compressor_->warmup_end_step();
  measure_from_step_ = stats_.warmup_end_step;
  stats_.dense_bytes_per_step = CountingCommunicator::allreduce_bytes(
      flat_gradients_.size(), sizeof(float), comm_->rank(), comm_->size());

  // The timeline is rank-local (each rank may name its own file, or none), so opening it can fail
  // on some ranks only: the ranks agree on it before going on (Note [Ending the job on an error]).
  const std::string& timeline_file = config_.get_string(config::keys::kTimeline);
  agree_on_startup_errors(*comm_, [&] {
    if (timeline_file.empty()) return;
    std::vector<std::string> tracks = {"program thread: steps"};
    for (const fusion::Bucket& b : plan_.buckets) {
      const std::string& first = params_[b.end - 1].spec.name;
      const std::string& last = params_[b.begin].spec.name;
      char mb[32];
      std::snprintf(mb, sizeof mb, "%.2f MB", static_cast<double>(b.numel) * 4 / 1e6);
      tracks.push_back("bucket " + std::to_string(b.index) + ": " + first +
                       (b.end - b.begin > 1 ? " .. " + last : "") + " (" + mb + ")");
    }
    timeline_ = std::make_unique<Timeline>(timeline_file, comm_->rank(), tracks);
  });

  check_same_on_all_ranks(*comm_, config_.canonical() + layout_canonical());
  if (config_.get_bool(config::keys::kBroadcastParameters)) broadcast_parameters();
  engine_ = std::make_unique<Engine>([this](std::size_t b) { run_job(b); }, plan_.size());
  previous_step_end_ = Timeline::Clock::now();
  if (comm_->rank() == 0) {
    const std::string amp_line =
        scaler_ ? "; mixed precision (" + amp_.ops.describe() + "; loss scale " +
                      std::to_string(scaler_->scale()) +
                      (amp_.scaler.dynamic ? ", dynamic" : ", static") + "; gradient wire " +
                      gradient_wire_ + ")"
                : "";
    log_.log(LogLevel::kInfo,
             "%zu parameters (%zu floats, %.2f MB) in one flat gradient buffer, %s (fusion "
             "threshold %g MiB); %d ranks; inner optimizer %s; compressor %s; gradients %s over "
             "ranks; sync %s%s%s",
             params_.size(), flat_gradients_.size(), flat_gradients_.size() * 4 / 1e6,
             plan_.describe(sizeof(float)).c_str(), threshold_mib, comm_->size(),
             inner_->name().c_str(), compressor_->name().c_str(),
             average_ ? "averaged" : "summed", policy_.name().c_str(), amp_line.c_str(),
             timeline_ ? ("; timeline " + timeline_->path()).c_str() : "");
  }
}

std::string DistributedOptimizer::layout_canonical() const {
  // One line per parameter, so a mismatch names the parameter that differs.
  std::string out;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    out += "parameter[" + std::to_string(i) + "]=" + params_[i].spec.name + " (" +
           std::to_string(params_[i].spec.numel) + " elements)\n";
  }
  out += "parameters=" + std::to_string(params_.size()) + "\n";
  return out;
}

float* DistributedOptimizer::gradient(std::size_t i) {
  if (i >= params_.size()) {
    throw std::out_of_range("DistributedOptimizer::gradient: parameter index " + std::to_string(i) +
                            " of " + std::to_string(params_.size()));
  }
  return flat_gradients_.data() + params_[i].offset;
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
  if (timeline_) first_ready_ = Timeline::Clock::now();
  if (steps_ == measure_from_step_) {
    bytes_at_warmup_end_ = comm_->counters()[TrafficKind::kGradient].sent_bytes;
  }
  exchanging_ = policy_.exchanges_gradients(steps_);
  overflow_ = false;
  exchanged_ = false;
  job_overflow_ = false;
  step_dense_tensors_ = step_sparse_tensors_ = 0;
  step_fallback_ = false;
  run_order_.clear();
  if (scaler_ && !(exchanging_ && check_after_exchange_)) {
    // Each rank checks its own gradients first (Note [Mixed precision in the step]).
    job_ = Job::kCheck;
  } else if (exchanging_) {
    compressor_->begin_step(steps_);
    job_ = Job::kExchange;
  } else {
    job_ = Job::kNone;  // a local step without AMP: nothing to do per bucket
  }
}

void DistributedOptimizer::launch_released(std::size_t count) {
  if (count == 0 || job_ == Job::kNone) return;
  const std::size_t end = tracker_.released();
  for (std::size_t b = end - count; b < end; ++b) {
    if (timeline_) times_[b].released = Timeline::Clock::now();
    // A bucket's job failed while backward went on (Note [Engine threads]): report it here.
    if (!engine_->launch(b)) {
      wait_engine();  // throws the failure
      throw std::logic_error("DistributedOptimizer: the engine refused a bucket but reported no "
                             "failure");
    }
  }
}

void DistributedOptimizer::launch_all() {
  for (std::size_t b = 0; b < plan_.size(); ++b) {
    if (!engine_->launch(b)) return;  // a job failed: the wait_engine() that follows reports it
  }
}

void DistributedOptimizer::run_job(std::size_t b) {
  const bool timed = timeline_ != nullptr;
  const auto now = [timed] {
    return timed ? Timeline::Clock::now() : Timeline::Clock::time_point();
  };
  BucketTimes& t = times_[b];
  // The AMP unscale-and-check of bucket b, timed from `begin`.
  const auto check = [&](Timeline::Clock::time_point begin) {
    t.check_begin = begin;
    if (!unscale_and_check(b)) job_overflow_ = true;
    t.check_end = now();
    t.check_ran = true;
  };
  if (job_ != Job::kAverageParameters) run_order_.push_back(b);
  if (inject_.step == steps_ && inject_.bucket == b &&
      (inject_.rank < 0 || inject_.rank == comm_->rank())) {
    throw std::runtime_error("injected failure (test)");
  }
  switch (job_) {
    case Job::kExchange:
      t.started = now();
      exchange_bucket(b);
      t.exchange_ran = true;
      if (scaler_ && check_after_exchange_) check(t.exchange.decoded);
      break;
    case Job::kCheck:
      check(now());
      break;
    case Job::kAverageParameters:
      t.average_begin = now();
      average_bucket(b);
      t.average_end = now();
      t.average_ran = true;
      break;
    case Job::kNone:
      break;
  }
}

void DistributedOptimizer::wait_engine() {
  const std::optional<Engine::Failure> failure = engine_->wait();
  if (!failure) return;
  const fusion::Bucket& b = plan_.buckets[failure->bucket];
  const std::string context =
      "gradwire engine on rank " + std::to_string(comm_->rank()) + ", step " +
      std::to_string(steps_) + ", bucket " + std::to_string(b.index) + " of " +
      std::to_string(plan_.size()) + " (" + params_[b.end - 1].spec.name +
      (b.end - b.begin > 1 ? " .. " + params_[b.begin].spec.name : "") + "): ";
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
    throw std::runtime_error("DistributedOptimizer: unusable after an engine failure (" +
                             failure_ + ")");
  }
}

float DistributedOptimizer::target_multiplier() const {
  return average_ ? 1.0f / static_cast<float>(comm_->size()) : 1.0f;
}

void DistributedOptimizer::collect_gradients() {
  throw_if_failed();
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
  if (job_ == Job::kCheck) {
    // Before the exchange (Note [Mixed precision in the step]): one vote, then the exchange.
    overflow_ = any_rank_overflowed(job_overflow_);
    if (!overflow_ && exchanging_) {
      compressor_->begin_step(steps_);
      job_ = Job::kExchange;
      launch_all();
      wait_engine();
    }
  } else if (job_ == Job::kExchange && scaler_) {
    overflow_ = job_overflow_;  // checked after the exchange, the same bits on every rank
  }
  if (job_ == Job::kExchange) {
    ++sync_stats_.gradient_exchanges;
    exchanged_ = true;
    if (log_.enabled(LogLevel::kDebug)) {
      const double ms = std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - wait_begin).count();
      log_.log(LogLevel::kDebug,
               "step %lld: %s exchange of %zu floats in %zu buckets; step() waited %.3f ms for "
               "them (%zu dense, %zu sparse tensors%s)",
               static_cast<long long>(steps_), compressor_->name().c_str(),
               flat_gradients_.size(), plan_.size(), ms, step_dense_tensors_,
               step_sparse_tensors_, step_fallback_ ? ", dense fallback" : "");
    }
  }
  if (!exchanging_) {
    // A local step: this rank's own gradient is what the inner optimizer uses, unscaled.
    std::fill(multiplier_.begin(), multiplier_.end(), target_multiplier());
  }
}

bool DistributedOptimizer::unscale_and_check(std::size_t b) {
  // The 1/n of the average stays with multiplier_ (Note [Who divides by the world size]), so one
  // factor covers the whole bucket.
  const compressors::BucketView& bucket = buckets_[b];
  return kernels::scale_and_check_finite(bucket.data, 1.0f / scaler_->scale(), bucket.numel,
                                         Device::kHost);
}

bool DistributedOptimizer::any_rank_overflowed(bool overflow) {
  std::int32_t flag = overflow ? 1 : 0;
  comm_->allreduce(&flag, 1, DataType::kInt32, ReduceOp::kMax, TrafficKind::kControl);
  return flag != 0;
}

void DistributedOptimizer::exchange_bucket(std::size_t b) {
  const compressors::BucketView& bucket = buckets_[b];
  const compressors::ExchangePlan& plan =
      exchanges_[b].run(*comm_, *compressor_, bucket, TrafficKind::kGradient,
                        timeline_ ? &times_[b].exchange : nullptr);
  const float inv_n = 1.0f / static_cast<float>(comm_->size());
  const bool average_wire = plan.dense_wire == compressors::DenseWire::kFloat16;
  for (std::size_t pos : plan.dense) {
    multiplier_[bucket.tensors[pos].parameter] = average_wire ? inv_n : 1.0f;
  }
  for (std::size_t pos : plan.sparse) multiplier_[bucket.tensors[pos].parameter] = 1.0f;
  if (!plan.sparse.empty()) ++stats_.sparse_exchanges;
  if (plan.dense_fallback) ++stats_.dense_fallbacks;
  step_dense_tensors_ += plan.dense.size();
  step_sparse_tensors_ += plan.sparse.size();
  step_fallback_ = step_fallback_ || plan.dense_fallback;
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
      kernels::scale(flat_gradients_.data() + params_[i].offset, scale, params_[i].spec.numel,
                     Device::kHost);
    }
    multiplier_[i] = target_multiplier();
  }
  synchronized_ = true;
}

void DistributedOptimizer::report_loss(double loss) {
  if (loss_reported_) {
    throw std::logic_error("report_loss: called twice in step " + std::to_string(steps_));
  }
  loss_reported_ = true;
  // The loss of a period counts from the switch to local steps on.
  if (steps_ >= policy_.options().begin_step) {
    loss_sum_ += loss;
    ++loss_count_;
  }
}

void DistributedOptimizer::step() {
  throw_if_failed();
  const bool local = !policy_.exchanges_gradients(steps_);
  if (policy_.needs_loss() && steps_ >= policy_.options().begin_step && !loss_reported_) {
    throw std::logic_error(std::string(config::keys::kSync) + "=" + policy_.name() +
                           " adapts its period to the training loss: call report_loss(loss) "
                           "before step() (missing at step " + std::to_string(steps_) + ")");
  }
  const auto wait_begin = timeline_ ? Timeline::Clock::now() : Timeline::Clock::time_point();
  if (!synchronized_) {
    if (inner_->accepts_gradient_scale()) {
      collect_gradients();
    } else {
      synchronize_gradients();
    }
  }
  const auto wait_end = timeline_ ? Timeline::Clock::now() : Timeline::Clock::time_point();
  for (std::size_t i = 0; i < views_.size(); ++i) views_[i].grad_scale = needed_scale(i);
  const bool skip = overflow_;
  if (scaler_) {
    const float scale = scaler_->scale();
    scaler_->update(steps_, skip);
    if (skip) {
      // A run that keeps overflowing at the floor has diverged (the nan is not the scale's).
      const bool stuck = scaler_->at_floor() && scaler_->consecutive_skips() > 1;
      const LogLevel level = stuck ? LogLevel::kWarn : LogLevel::kDebug;
      if (log_.enabled(level)) {
        log_.log(level,
                 "step %lld: gradients overflowed at loss scale %g on some rank; step skipped on "
                 "every rank, loss scale now %g%s",
                 static_cast<long long>(steps_), static_cast<double>(scale),
                 static_cast<double>(scaler_->scale()),
                 stuck ? (" (the floor, " + std::to_string(scaler_->consecutive_skips()) +
                          " overflowing steps in a row: the loss or the gradients are not finite "
                          "at any scale)").c_str()
                       : "");
      }
    }
  }
  if (local) {
    if (delta_wire_ && !anchor_valid_) {
      // The first local step after synchronous ones (or the start): every rank holds the same
      // parameters, which the first fp16 delta is taken from.
      anchor_.resize(parameter_flat_.size());
      for (const auto& p : params_) {
        std::memcpy(anchor_.data() + p.offset, p.spec.value, p.spec.numel * sizeof(float));
      }
      anchor_valid_ = true;
    }
    ++local_steps_since_average_;
  } else {
    anchor_valid_ = false;  // synchronous steps move every rank's parameters away from it
  }
  if (!skip) inner_->step(views_);
  synchronized_ = false;
  overflow_ = false;
  loss_reported_ = false;
  if (exchanged_ && steps_ >= measure_from_step_) {
    ++stats_.steps_after_warmup;
    stats_.gradient_bytes_after_warmup =
        comm_->counters()[TrafficKind::kGradient].sent_bytes - bytes_at_warmup_end_;
  }
  const auto update_end = timeline_ ? Timeline::Clock::now() : Timeline::Clock::time_point();
  if (policy_.averages_after(steps_)) average_parameters(/*scheduled=*/true);
  const std::int64_t step = steps_++;
  if (timeline_) record_timeline(step, wait_begin, wait_end, update_end);
}

void DistributedOptimizer::record_timeline(std::int64_t step,
                                           Timeline::Clock::time_point wait_begin,
                                           Timeline::Clock::time_point wait_end,
                                           Timeline::Clock::time_point update_end) {
  Timeline& tl = *timeline_;
  const auto now = Timeline::Clock::now();
  char name[48];
  std::snprintf(name, sizeof name, "step %lld", static_cast<long long>(step));
  tl.span(0, name, previous_step_end_, now, step);
  tl.instant(0, name, now, step);
  tl.span(0, "step() waits for buckets", wait_begin, wait_end, step);
  tl.span(0, overflow_ ? "step skipped (overflow)" : "inner optimizer", wait_end, update_end,
          step);
  for (std::size_t b = 0; b < times_.size(); ++b) {
    const BucketTimes& t = times_[b];
    const std::size_t track = b + 1;
    if (t.check_ran || t.exchange_ran) {
      // A step() without gradient_ready: the wait starts at the release.
      const auto first = std::min(first_ready_, t.released);
      tl.span(track, "wait for gradients", first, t.released, step);
      // The bucket's first job: its exchange, or the AMP check that comes before it.
      const auto job_start = !t.exchange_ran ? t.check_begin
                             : t.check_ran   ? std::min(t.started, t.check_begin)
                                             : t.started;
      tl.span(track, "queued", t.released, job_start, step);
    }
    if (t.exchange_ran) {
      tl.span(track, "encode", t.started, t.exchange.encoded, step);
      tl.span(track, "exchange", t.exchange.encoded, t.exchange.exchanged, step);
      tl.span(track, "decode", t.exchange.exchanged, t.exchange.decoded, step);
    }
    if (t.check_ran) tl.span(track, "amp check", t.check_begin, t.check_end, step);
    if (t.average_ran) tl.span(track, "average parameters", t.average_begin, t.average_end, step);
  }
  for (BucketTimes& t : times_) t.exchange_ran = t.check_ran = t.average_ran = false;
  tl.flush();
  previous_step_end_ = Timeline::Clock::now();
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
  if (local_steps_since_average_ == 0) return;
  average_parameters(/*scheduled=*/false);
}

void DistributedOptimizer::average_parameters(bool scheduled) {
  // Bucket by bucket on the engine (Note [Parameter averaging wire]).
  job_ = Job::kAverageParameters;
  launch_all();
  wait_engine();
  if (average_state_) average_state();

  AveragingPoint point;
  // A scheduled point runs inside step() before the count advances; a requested one after it.
  point.step = scheduled ? steps_ : steps_ - 1;
  point.local_steps = local_steps_since_average_;
  point.k = policy_.period();
  point.requested = !scheduled;
  if (scheduled) {
    double loss = 0.0;
    if (policy_.needs_loss()) {
      double sums[2] = {loss_sum_, static_cast<double>(loss_count_)};
      comm_->allreduce(sums, 2, DataType::kFloat64, ReduceOp::kSum, TrafficKind::kControl);
      loss = sums[0] / sums[1];
      point.has_loss = true;
      point.loss = loss;
    }
    policy_.averaged(steps_, loss, inner_->learning_rate());
    loss_sum_ = 0.0;
    loss_count_ = 0;
  }
  point.next_k = policy_.period();
  sync_stats_.points.push_back(point);
  ++sync_stats_.parameter_exchanges;
  local_steps_since_average_ = 0;
  if (log_.enabled(LogLevel::kDebug)) {
    log_.log(LogLevel::kDebug, "step %lld: %s parameter averaging after %lld local steps%s",
             static_cast<long long>(point.step), scheduled ? "scheduled" : "requested",
             static_cast<long long>(point.local_steps),
             point.has_loss ? (", mean loss " + std::to_string(point.loss) + ", next k " +
                               std::to_string(point.next_k)).c_str()
                            : "");
  }
}

void DistributedOptimizer::average_bucket(std::size_t b) {
  const fusion::Bucket& bucket = plan_.buckets[b];
  const float inv_n = 1.0f / static_cast<float>(comm_->size());
  float* flat = parameter_flat_.data();
  for (std::size_t i = bucket.begin; i < bucket.end; ++i) {
    const Registered& p = params_[i];
    if (delta_wire_) {
      const float* w = p.spec.value;
      const float* a = anchor_.data() + p.offset;
      float* d = flat + p.offset;
      for (std::size_t j = 0; j < p.spec.numel; ++j) d[j] = w[j] - a[j];
    } else {
      std::memcpy(flat + p.offset, p.spec.value, p.spec.numel * sizeof(float));
    }
  }
  // fp16 comes back averaged (each rank sends delta / n); fp32 comes back summed.
  parameter_exchanges_[b].run(*comm_, *parameter_compressor_, parameter_buckets_[b],
                              TrafficKind::kParameter);
  for (std::size_t i = bucket.begin; i < bucket.end; ++i) {
    const Registered& p = params_[i];
    float* w = p.spec.value;
    const float* avg = flat + p.offset;
    if (delta_wire_) {
      float* a = anchor_.data() + p.offset;
      for (std::size_t j = 0; j < p.spec.numel; ++j) {
        w[j] = a[j] + avg[j];
        a[j] = w[j];
      }
    } else {
      for (std::size_t j = 0; j < p.spec.numel; ++j) w[j] = avg[j] * inv_n;
    }
  }
}

void DistributedOptimizer::average_state() {
  std::vector<StateBuffer> buffers = *inner_->state_buffers();
  std::size_t total = 0;
  for (const auto& b : buffers) total += b.numel;
  if (state_bucket_.tensors.empty() && total > 0) {
    // First time: every rank must hold the same layout, or the allreduce would mix arrays.
    std::int64_t mine[2] = {static_cast<std::int64_t>(buffers.size()),
                            static_cast<std::int64_t>(total)};
    std::int64_t high[2] = {mine[0], mine[1]}, low[2] = {mine[0], mine[1]};
    comm_->allreduce(high, 2, DataType::kInt64, ReduceOp::kMax, TrafficKind::kControl);
    comm_->allreduce(low, 2, DataType::kInt64, ReduceOp::kMin, TrafficKind::kControl);
    if (high[0] != low[0] || high[1] != low[1]) {
      throw std::runtime_error(
          "GRADWIRE_LOCAL_SGD_AVERAGE_STATE: ranks hold different optimizer state layouts (" +
          std::to_string(low[0]) + " to " + std::to_string(high[0]) + " arrays, " +
          std::to_string(low[1]) + " to " + std::to_string(high[1]) + " floats)");
    }
    state_flat_.assign(total, 0.0f);
    std::size_t offset = 0;
    for (std::size_t i = 0; i < buffers.size(); ++i) {
      state_bucket_.tensors.push_back({i, offset, buffers[i].numel});
      offset += buffers[i].numel;
    }
    state_bucket_.data = state_flat_.data();
    state_bucket_.numel = total;
  }
  if (total == 0) return;
  if (total != state_flat_.size() || buffers.size() != state_bucket_.tensors.size()) {
    throw std::runtime_error("GRADWIRE_LOCAL_SGD_AVERAGE_STATE: " + inner_->name() +
                             "'s state layout changed during the run");
  }
  std::size_t offset = 0;
  for (const auto& b : buffers) {
    std::memcpy(state_flat_.data() + offset, b.values, b.numel * sizeof(float));
    offset += b.numel;
  }
  compressors::NoneCompressor fp32;
  state_exchange_.run(*comm_, fp32, state_bucket_, TrafficKind::kParameter);
  const float inv_n = 1.0f / static_cast<float>(comm_->size());
  offset = 0;
  for (const auto& b : buffers) {
    const float* sum = state_flat_.data() + offset;
    for (std::size_t j = 0; j < b.numel; ++j) b.values[j] = sum[j] * inv_n;
    offset += b.numel;
  }
  ++sync_stats_.state_exchanges;
}

namespace {

// Note [Optimizer state stream]: the 8-byte magic "GWDOPT3\0", the step count (i64), the
// compressor's state (Note [Compressor state format]), the inner optimizer's, the sync policy's
// (Note [Sync policy state format]), then in host byte order this rank's loss sum since the last
// averaging point (f64) and its count (i64), the local steps since the last averaging (i64), the
// fp16 anchor: a flag (u8), its element count (u64) and its floats; and mixed precision: a flag
// (u8) and, when set, the loss scaler's state (Note [Loss scaler state format]).
constexpr char kStateMagic[8] = {'G', 'W', 'D', 'O', 'P', 'T', '3', '\0'};

constexpr const char* kLoadContext = "DistributedOptimizer::load_state";
using binary::put;

template <typename T>
T get(std::istream& in) {
  return binary::get<T>(in, kLoadContext);
}

}  // namespace

void DistributedOptimizer::save_state(std::ostream& out) const {
  check_between_steps("save_state");
  out.write(kStateMagic, sizeof kStateMagic);
  put<std::int64_t>(out, steps_);
  compressor_->save_state(out);
  inner_->save_state(out);
  policy_.save_state(out);
  put<double>(out, loss_sum_);
  put<std::int64_t>(out, loss_count_);
  put<std::int64_t>(out, local_steps_since_average_);
  put<std::uint8_t>(out, anchor_valid_ ? 1 : 0);
  const std::uint64_t anchor_size = anchor_valid_ ? anchor_.size() : 0;
  put<std::uint64_t>(out, anchor_size);
  out.write(reinterpret_cast<const char*>(anchor_.data()),
            static_cast<std::streamsize>(anchor_size * sizeof(float)));
  put<std::uint8_t>(out, scaler_ ? 1 : 0);
  if (scaler_) scaler_->save_state(out);
  if (!out) throw std::runtime_error("DistributedOptimizer::save_state: error while writing");
}

void DistributedOptimizer::load_state(std::istream& in) {
  check_between_steps("load_state");
  char magic[8];
  std::int64_t steps = 0;
  in.read(magic, sizeof magic);
  in.read(reinterpret_cast<char*>(&steps), sizeof steps);
  if (!in || std::memcmp(magic, kStateMagic, sizeof magic) != 0 || steps < 0) {
    throw std::runtime_error("DistributedOptimizer::load_state: not a gradwire optimizer state" +
                             std::string(in && std::memcmp(magic, kStateMagic, 6) == 0
                                             ? " of this version (format " +
                                                   std::string(1, magic[6]) + ", expected 3)"
                                             : ""));
  }
  // Each part's load is all-or-nothing; keep copies so that a failure in a later part restores
  // the earlier ones too.
  std::stringstream compressor_before, inner_before, policy_before, scaler_before;
  compressor_->save_state(compressor_before);
  inner_->save_state(inner_before);
  policy_.save_state(policy_before);
  if (scaler_) scaler_->save_state(scaler_before);
  double loss_sum = 0;
  std::int64_t loss_count = 0, local_steps = 0;
  bool anchor_valid = false;
  std::vector<float> anchor;
  try {
    compressor_->load_state(in);
    inner_->load_state(in);
    policy_.load_state(in);
    loss_sum = get<double>(in);
    loss_count = get<std::int64_t>(in);
    local_steps = get<std::int64_t>(in);
    const auto flag = get<std::uint8_t>(in);
    const auto anchor_size = get<std::uint64_t>(in);
    anchor_valid = flag == 1;
    if (flag > 1 || loss_count < 0 || local_steps < 0 ||
        anchor_size != (anchor_valid ? parameter_flat_.size() : 0)) {
      throw std::runtime_error(
          "DistributedOptimizer::load_state: the local SGD state does not fit this layout (anchor "
          "of " + std::to_string(anchor_size) + " floats, " +
          std::to_string(parameter_flat_.size()) + " parameters)");
    }
    anchor.resize(anchor_size);
    binary::read_bytes(in, anchor.data(), anchor_size * sizeof(float), kLoadContext);
    const auto amp_flag = get<std::uint8_t>(in);
    if (amp_flag != (scaler_ ? 1 : 0)) {
      throw std::runtime_error(
          std::string("DistributedOptimizer::load_state: the state was saved with ") +
          config::keys::kAmp + "=" + (amp_flag == 1 ? "1" : "0") + ", this run has " +
          config::keys::kAmp + "=" + (scaler_ ? "1" : "0"));
    }
    if (scaler_) scaler_->load_state(in);
  } catch (...) {
    compressor_->load_state(compressor_before);
    inner_->load_state(inner_before);
    policy_.load_state(policy_before);
    if (scaler_) scaler_->load_state(scaler_before);
    throw;
  }
  steps_ = steps;
  loss_sum_ = loss_sum;
  loss_count_ = loss_count;
  local_steps_since_average_ = local_steps;
  anchor_valid_ = anchor_valid;
  if (anchor_valid_) anchor_.swap(anchor);
  synchronized_ = false;
  loss_reported_ = false;
  // Per-step figures of a resumed run start at the resume point.
  measure_from_step_ = std::max(stats_.warmup_end_step, steps_);
  stats_.steps_after_warmup = 0;
  stats_.gradient_bytes_after_warmup = 0;
}

void DistributedOptimizer::broadcast_parameters() {
  check_between_steps("broadcast_parameters");
  // One collective for all parameters: pack, broadcast, unpack.
  std::vector<float> staging(flat_gradients_.size());
  for (const auto& p : params_) {
    std::memcpy(staging.data() + p.offset, p.spec.value, p.spec.numel * sizeof(float));
  }
  comm_->broadcast(staging.data(), staging.size(), DataType::kFloat32, 0, TrafficKind::kParameter);
  for (const auto& p : params_) {
    std::memcpy(p.spec.value, staging.data() + p.offset, p.spec.numel * sizeof(float));
  }
}

}  // namespace gw
