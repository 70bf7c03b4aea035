// DistributedOptimizer's bucket jobs (Note [Buckets in the step]): handing released buckets to the
// engine, the job each runs on the engine thread (exchange, AMP check, parameter averaging), and
// an engine failure brought back to the caller with its rank, step and bucket.
#include <optional>
#include <stdexcept>
#include <string>

#include "plugin/distributed_optimizer.h"

namespace gw {

void DistributedOptimizer::launch_released(std::size_t count) {
  if (count == 0) return;
  const std::size_t end = buckets_.tracker.released();
  // Observed even when no job runs now: auto's first step runs its exchanges after collect.
  for (std::size_t b = end - count; b < end; ++b) observers_.bucket_released(b, params_.stream());
  if (facts_.gradients.job == Job::kNone) return;
  for (std::size_t b = end - count; b < end; ++b) {
    buckets_.ready[b].record(params_.stream());
    // A bucket's job failed while backward went on (Note [Engine threads]): report it here.
    if (!engines_.buckets->launch(b)) {
      wait_engine();  // throws the failure
      throw std::logic_error(
          "DistributedOptimizer: the engine refused a bucket but reported no "
          "failure");
    }
  }
}

void DistributedOptimizer::launch_all() {
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    buckets_.ready[b].record(params_.stream());
    if (!engines_.buckets->launch(b))
      return;  // a job failed: the wait_engine() that follows reports it
  }
}

void DistributedOptimizer::run_job(std::size_t b) {
  const Job job = facts_.gradients.job;
  StepTimeline::BucketTimes& t = timeline_.bucket(b);
  if (job != Job::kAverageParameters) buckets_.run_order.push_back(b);
  const Options::InjectedFailure& inject = failure_.inject;
  if (inject.step == steps_ && inject.bucket == b &&
      (inject.rank < 0 || inject.rank == comm_->rank())) {
    throw std::runtime_error("injected failure (test)");
  }
  // The bucket's data was written on the program's stream (Note [The step on a device]).
  comm_stream_.make_current();
  buckets_.ready[b].make_wait(comm_stream_);
  switch (job) {
    case Job::kExchange:
      timeline_.mark(t.started, comm_stream_);
      buckets_.span.job_started(comm_stream_);
      exchange_bucket(b);
      buckets_.span.job_ended(comm_stream_);
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
  if (!amp_.unscale_and_check(buckets_.views[b], comm_stream_)) {
    facts_.gradients.job_overflow = true;
  }
  timeline_.mark(t.check_end, comm_stream_);
  t.check_ran = true;
}

void DistributedOptimizer::exchange_bucket(std::size_t b) {
  const compressors::BucketView& bucket = buckets_.views[b];
  const compressors::ExchangePlan& plan = buckets_.exchanges[b].run(
      *comm_, *compressor_, bucket, TrafficKind::kGradient, timeline_.exchange_times(b));
  const float inv_n = 1.0f / static_cast<float>(comm_->size());
  const bool average_wire = plan.dense_wire == compressors::DenseWire::kFloat16;
  for (std::size_t pos : plan.dense) {
    scale_.set(bucket.tensors[pos].parameter, average_wire ? inv_n : 1.0f);
  }
  for (std::size_t pos : plan.sparse) scale_.set(bucket.tensors[pos].parameter, 1.0f);
  for (std::size_t pos : plan.low_rank) scale_.set(bucket.tensors[pos].parameter, 1.0f);
  compression_.bucket_exchanged(plan);
  StepFacts::Gradients& g = facts_.gradients;
  g.dense_tensors += plan.dense.size();
  g.sparse_tensors += plan.sparse.size();
  g.dense_fallback = g.dense_fallback || plan.dense_fallback;
}

void DistributedOptimizer::wait_engine() {
  const std::optional<Engine::Failure> failure = engines_.buckets->wait();
  if (!failure) return;
  const fusion::Bucket& b = buckets_.plan.buckets[failure->bucket];
  const std::string context = "gradwire engine on rank " + std::to_string(comm_->rank()) +
                              ", step " + std::to_string(steps_) + ", bucket " +
                              std::to_string(b.index) + " of " + std::to_string(buckets_.size()) +
                              " (" + params_.bucket_names(b) + "): ";
  buckets_.tracker.reset();
  // Keep the exception's type (a malformed peer payload stays a PayloadError), with the context.
  std::string& message = failure_.message;
  try {
    std::rethrow_exception(failure->error);
  } catch (const compressors::PayloadError& e) {
    message = context + e.what();
    throw compressors::PayloadError(message);
  } catch (const CommError& e) {
    message = context + e.what();
    throw CommError(message);
  } catch (const std::exception& e) {
    message = context + e.what();
    throw std::runtime_error(message);
  } catch (...) {
    message = context + "unknown exception";
    throw std::runtime_error(message);
  }
}

void DistributedOptimizer::start_fragment_engine() {
  engines_.fragments = std::make_unique<Engine>(
      [this](std::size_t f) { local_sgd_->run_fragment_job(f); }, local_sgd_->fragment_count());
  local_sgd_->set_fragment_runner(
      [this](std::size_t f) {
        if (!engines_.fragments->launch(f)) {
          wait_fragments();  // throws the failure
          throw std::logic_error(
              "DistributedOptimizer: the engine refused a fragment but "
              "reported no failure");
        }
      },
      [this] { wait_fragments(); });
}

void DistributedOptimizer::wait_fragments() {
  const std::optional<Engine::Failure> failure = engines_.fragments->wait();
  if (!failure) return;
  const std::string context = "gradwire streaming diloco on rank " + std::to_string(comm_->rank()) +
                              ", fragment " + std::to_string(failure->bucket) + " of " +
                              std::to_string(local_sgd_->fragment_count()) + ": ";
  try {
    std::rethrow_exception(failure->error);
  } catch (const std::exception& e) {
    throw std::runtime_error(context + e.what());
  } catch (...) {
    throw std::runtime_error(context + "unknown exception");
  }
}

void DistributedOptimizer::throw_if_failed() const {
  if (!failure_.message.empty()) {
    throw std::runtime_error("DistributedOptimizer: unusable after an engine failure (" +
                             failure_.message + ")");
  }
}

}  // namespace gw
