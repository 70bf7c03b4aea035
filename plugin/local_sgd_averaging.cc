#include "plugin/local_sgd_averaging.h"

#include <algorithm>
#include <cstdio>
#include <istream>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "common/binary_stream.h"
#include "compressors/none_compressor.h"
#include "kernels/update.h"
#include "plugin/comm/counting_communicator.h"
#include "plugin/config/config.h"
#include "plugin/config/params.h"

namespace gw {

LocalSgdAveraging::LocalSgdAveraging(const SyncSettings& settings,
                                     std::unique_ptr<compressors::Compressor> wire,
                                     Communicator& comm, Optimizer& inner,
                                     const ParameterSet& params, const fusion::BucketPlan& plan,
                                     const kernels::Stream& stream)
    : comm_(comm),
      inner_(inner),
      params_(params),
      plan_(plan),
      policy_(settings.policy),
      average_state_(settings.average_state),
      deltas_(wire->kind() != compressors::Kind::kNone),
      wire_(std::move(wire)),
      stream_(stream) {
  wire_->set_stream(stream_);
  if (policy_.mode() == sync_policies::SyncMode::kDiloco) {
    outer_ = std::make_unique<OuterOptimizer>(settings.outer, params.numel(), stream_);
  }
  flat_ = kernels::Buffer<float>(params.numel(), stream_);
  buckets_ = params.bucket_views(plan, flat_.data());
  exchanges_.resize(plan.size());
  stats_.policy = policy_.name();
  stats_.parameter_wire = deltas_ ? wire_->name() + " deltas" : "fp32 parameters";
  if (outer_) stats_.outer_optimizer = outer_->describe();
  if (outer_ && settings.streaming.fragments > 0) start_streaming(settings.streaming);
}

LocalSgdAveraging::~LocalSgdAveraging() {
  if (streaming_.guarded) static_cast<CountingCommunicator&>(comm_).set_guard(this, {});
}

void LocalSgdAveraging::start_streaming(const SyncSettings::Streaming& streaming) {
  streaming_.settings = streaming;
  const auto fragments = static_cast<std::size_t>(streaming.fragments);
  try {
    streaming_.plan = fusion::plan_fragments(plan_, params_.numels(), fragments);
  } catch (const std::invalid_argument&) {
    throw config::ConfigError(std::string(config::keys::kDilocoFragments) + "=" +
                              std::to_string(fragments) + " exceeds the model's " +
                              std::to_string(params_.size()) +
                              " parameter tensors: each fragment holds at least one whole tensor");
  }
  buckets_ = params_.bucket_views(streaming_.plan.buckets, flat_.data());
  exchanges_ = std::vector<BucketExchange>(streaming_.plan.buckets.size());
  streaming_.fragments.resize(fragments);
  for (std::size_t f = 0; f < fragments; ++f)
    streaming_.fragments[f].buckets = streaming_.plan.buckets_of[f];
  if (streaming_.settings.mixing > 0.0f)
    streaming_.own = kernels::Buffer<float>(params_.numel(), stream_);
  if (streaming_.settings.delay > 0) {
    auto* counting = dynamic_cast<CountingCommunicator*>(&comm_);
    if (!counting) {
      throw std::logic_error(std::string(config::keys::kDilocoDelay) +
                             " > 0 needs a CountingCommunicator to keep its exchange apart from "
                             "the program's collectives");
    }
    counting->set_guard(this, [this] { wait_in_flight(); });
    streaming_.guarded = true;
  }
  char text[128];
  std::snprintf(text, sizeof text, "; streamed in %zu fragments, delay %lld, mixing %g", fragments,
                static_cast<long long>(streaming_.settings.delay),
                static_cast<double>(streaming_.settings.mixing));
  stats_.outer_optimizer += text;
}

void LocalSgdAveraging::add_loss(std::int64_t step, double loss) {
  if (step >= policy_.options().begin_step) {
    loss_.sum += loss;
    ++loss_.count;
  }
}

void LocalSgdAveraging::check_loss_reported(std::int64_t step, bool reported) const {
  if (policy_.needs_loss() && step >= policy_.options().begin_step && !reported) {
    throw std::logic_error(std::string(config::keys::kSync) + "=" + policy_.name() +
                           " adapts its period to the training loss: call report_loss(loss) "
                           "before step() (missing at step " +
                           std::to_string(step) + ")");
  }
}

void LocalSgdAveraging::before_update(bool local_step) {
  if (!local_step) {
    anchor_valid_ = false;
    return;
  }
  if ((deltas_ || outer_) && !anchor_valid_) {
    anchor_.reserve_discard(flat_.size(), stream_);
    params_.gather_values(anchor_.data());
    anchor_valid_ = true;
  }
  ++local_steps_since_average_;
  for (Fragment& f : streaming_.fragments) ++f.local_steps;
}

std::int64_t LocalSgdAveraging::local_steps_since_average() const {
  if (!streaming()) return local_steps_since_average_;
  std::int64_t most = 0;
  for (const Fragment& f : streaming_.fragments)
    most = std::max(most, f.local_steps + (f.in_flight ? 1 : 0));
  return most;
}

void LocalSgdAveraging::begin_point() {
  wire_->begin_step(outer_ ? outer_->steps() : stats_.parameter_exchanges);
}

void LocalSgdAveraging::snapshot(std::size_t b) {
  float* flat = flat_.data();
  for (const auto& t : buckets_[b].tensors) {
    const ParameterSet::Registered& p = params_[t.parameter];
    if (deltas_) {
      kernels::subtract(p.spec.value, anchor_.data() + p.offset, flat + p.offset, p.spec.numel,
                        stream_);
    } else {
      kernels::copy_bytes(flat + p.offset, p.spec.value, p.spec.numel * sizeof(float), stream_);
    }
  }
}

void LocalSgdAveraging::average_bucket(std::size_t b) {
  const fusion::Bucket& bucket = plan_.buckets[b];
  const float inv_n = 1.0f / static_cast<float>(comm_.size());
  float* flat = flat_.data();
  snapshot(b);
  // fp16 comes back averaged (each rank sends delta / n); fp32, sparse and low-rank summed.
  const compressors::ExchangePlan& plan =
      exchanges_[b].run(comm_, *wire_, buckets_[b], TrafficKind::kParameter);
  if (outer_) {
    const compressors::BucketView& view = buckets_[b];
    const auto apply = [&](const std::vector<std::size_t>& positions, float alpha) {
      for (std::size_t pos : positions) {
        const ParameterSet::Registered& p = params_[view.tensors[pos].parameter];
        outer_->apply(flat + p.offset, alpha, deltas_, p.spec.value, anchor_.data() + p.offset,
                      p.offset, p.spec.numel, stream_);
      }
    };
    apply(plan.dense, plan.dense_wire == compressors::DenseWire::kFloat16 ? 1.0f : inv_n);
    apply(plan.sparse, inv_n);
    apply(plan.low_rank, inv_n);
    stream_.synchronize();
    return;
  }
  for (std::size_t i = bucket.begin; i < bucket.end; ++i) {
    const ParameterSet::Registered& p = params_[i];
    float* w = p.spec.value;
    const float* avg = flat + p.offset;
    if (deltas_) {
      kernels::add_to_anchor(avg, w, anchor_.data() + p.offset, p.spec.numel, stream_);
    } else {
      kernels::scale_to(avg, inv_n, w, p.spec.numel, stream_);
    }
  }
  stream_.synchronize();
}

void LocalSgdAveraging::finish_point(std::int64_t step, bool scheduled, const Logger& log) {
  if (average_state_) average_state();
  if (outer_) outer_->count_step();
  AveragingPoint point;
  point.step = step;
  point.local_steps = local_steps_since_average_;
  point.k = policy_.period();
  point.requested = !scheduled;
  if (scheduled) {
    double loss = 0.0;
    if (policy_.needs_loss()) {
      double sums[2] = {loss_.sum, static_cast<double>(loss_.count)};
      comm_.allreduce(sums, 2, DataType::kFloat64, ReduceOp::kSum, TrafficKind::kControl);
      loss = sums[0] / sums[1];
      point.has_loss = true;
      point.loss = loss;
    }
    policy_.averaged(step, loss, inner_.learning_rate());
    loss_.sum = 0.0;
    loss_.count = 0;
  }
  point.next_k = policy_.period();
  stats_.points.push_back(point);
  ++stats_.parameter_exchanges;
  local_steps_since_average_ = 0;
  if (log.enabled(LogLevel::kDebug)) {
    log.log(LogLevel::kDebug, "step %lld: %s parameter averaging after %lld local steps%s",
            static_cast<long long>(point.step), scheduled ? "scheduled" : "requested",
            static_cast<long long>(point.local_steps),
            point.has_loss ? (", mean loss " + std::to_string(point.loss) + ", next k " +
                              std::to_string(point.next_k))
                                 .c_str()
                           : "");
  }
}

void LocalSgdAveraging::average_state() {
  std::vector<StateBuffer> buffers = *inner_.state_buffers();
  std::size_t total = 0;
  for (const auto& b : buffers) total += b.numel;
  if (state_.bucket.tensors.empty() && total > 0) {
    // First time: every rank must hold the same layout, or the allreduce would mix arrays.
    std::int64_t mine[2] = {static_cast<std::int64_t>(buffers.size()),
                            static_cast<std::int64_t>(total)};
    std::int64_t high[2] = {mine[0], mine[1]}, low[2] = {mine[0], mine[1]};
    comm_.allreduce(high, 2, DataType::kInt64, ReduceOp::kMax, TrafficKind::kControl);
    comm_.allreduce(low, 2, DataType::kInt64, ReduceOp::kMin, TrafficKind::kControl);
    if (high[0] != low[0] || high[1] != low[1]) {
      throw std::runtime_error(
          "GRADWIRE_LOCAL_SGD_AVERAGE_STATE: ranks hold different optimizer state layouts (" +
          std::to_string(low[0]) + " to " + std::to_string(high[0]) + " arrays, " +
          std::to_string(low[1]) + " to " + std::to_string(high[1]) + " floats)");
    }
    state_.flat = kernels::Buffer<float>(total, stream_);
    std::size_t offset = 0;
    for (std::size_t i = 0; i < buffers.size(); ++i) {
      state_.bucket.tensors.push_back({i, offset, buffers[i].numel});
      offset += buffers[i].numel;
    }
    state_.bucket.data = state_.flat.data();
    state_.bucket.numel = total;
  }
  if (total == 0) return;
  if (total != state_.flat.size() || buffers.size() != state_.bucket.tensors.size()) {
    throw std::runtime_error("GRADWIRE_LOCAL_SGD_AVERAGE_STATE: " + inner_.name() +
                             "'s state layout changed during the run");
  }
  std::size_t offset = 0;
  for (const auto& b : buffers) {
    kernels::copy_bytes(state_.flat.data() + offset, b.values, b.numel * sizeof(float), stream_);
    offset += b.numel;
  }
  compressors::NoneCompressor fp32;
  fp32.set_stream(stream_);
  state_.exchange.run(comm_, fp32, state_.bucket, TrafficKind::kParameter);
  const float inv_n = 1.0f / static_cast<float>(comm_.size());
  offset = 0;
  for (const auto& b : buffers) {
    kernels::scale_to(state_.flat.data() + offset, inv_n, b.values, b.numel, stream_);
    offset += b.numel;
  }
  stream_.synchronize();
  ++stats_.state_exchanges;
}

namespace {

// Errors name the call the program made.
constexpr const char* kLoadContext = "DistributedOptimizer::load_state";

template <typename T>
T get(std::istream& in) {
  return binary::get<T>(in, kLoadContext);
}

}  // namespace

void LocalSgdAveraging::save_state(std::ostream& out) const {
  using binary::put;
  wait_in_flight();  // the wire's residuals and the results in flight are complete
  policy_.save_state(out);
  put<double>(out, loss_.sum);
  put<std::int64_t>(out, loss_.count);
  put<std::int64_t>(out, local_steps_since_average_);
  put<std::uint8_t>(out, anchor_valid_ ? 1 : 0);
  const std::uint64_t anchor_size = anchor_valid_ ? flat_.size() : 0;
  put<std::uint64_t>(out, anchor_size);
  std::vector<float> anchor(anchor_size);
  kernels::copy_bytes(anchor.data(), anchor_.data(), anchor_size * sizeof(float), stream_);
  stream_.synchronize();
  out.write(reinterpret_cast<const char*>(anchor.data()),
            static_cast<std::streamsize>(anchor_size * sizeof(float)));
  // diloco: the fragments (Note [Streaming DiLoCo]), the wire's error feedback and the outer
  // momentum (Note [DiLoCo]).
  if (outer_) {
    if (streaming()) save_streaming(out);
    wire_->save_state(out);
    outer_->save_state(out);
  }
}

void LocalSgdAveraging::load_state(std::istream& in) {
  wait_in_flight();  // what this run has in flight is replaced by the checkpoint's
  std::stringstream policy_before;
  policy_.save_state(policy_before);
  double loss_sum = 0;
  std::int64_t loss_count = 0, local_steps = 0;
  bool anchor_valid = false;
  std::vector<float> anchor;
  try {
    policy_.load_state(in);
    loss_sum = get<double>(in);
    loss_count = get<std::int64_t>(in);
    local_steps = get<std::int64_t>(in);
    const auto flag = get<std::uint8_t>(in);
    const auto anchor_size = get<std::uint64_t>(in);
    anchor_valid = flag == 1;
    if (flag > 1 || loss_count < 0 || local_steps < 0 ||
        anchor_size != (anchor_valid ? flat_.size() : 0)) {
      throw std::runtime_error(
          "DistributedOptimizer::load_state: the local SGD state does not fit this layout (anchor "
          "of " +
          std::to_string(anchor_size) + " floats, " + std::to_string(flat_.size()) +
          " parameters)");
    }
    anchor.resize(anchor_size);
    binary::read_bytes(in, anchor.data(), anchor_size * sizeof(float), kLoadContext);
  } catch (...) {
    policy_.load_state(policy_before);
    throw;
  }
  std::vector<Fragment> fragments;
  if (outer_) {
    std::stringstream wire_before;
    wire_->save_state(wire_before);
    try {
      if (streaming()) fragments = read_streaming(in);
      wire_->load_state(in);
      outer_->load_state(in);  // all or nothing itself
    } catch (...) {
      policy_.load_state(policy_before);
      wire_->load_state(wire_before);
      throw;
    }
  }
  if (streaming()) {
    // The results in flight go back where their exchange left them.
    for (std::size_t f = 0; f < fragments.size(); ++f) {
      if (!fragments[f].in_flight) continue;
      const std::vector<float>& saved = fragments[f].saved_flat;
      std::size_t at = 0;
      for (std::size_t b : streaming_.fragments[f].buckets) {
        kernels::copy_bytes(buckets_[b].data, saved.data() + at, buckets_[b].numel * sizeof(float),
                            stream_);
        at += buckets_[b].numel;
      }
    }
    stream_.synchronize();
    for (std::size_t f = 0; f < fragments.size(); ++f) {
      fragments[f].buckets = std::move(streaming_.fragments[f].buckets);
      fragments[f].saved_flat.clear();
    }
    streaming_.fragments = std::move(fragments);
  }
  loss_.sum = loss_sum;
  loss_.count = loss_count;
  local_steps_since_average_ = local_steps;
  anchor_valid_ = anchor_valid;
  if (anchor_valid_) {
    kernels::copy_bytes(anchor_.reserve_discard(flat_.size(), stream_), anchor.data(),
                        anchor.size() * sizeof(float), stream_);
    stream_.synchronize();
  }
}

}  // namespace gw
