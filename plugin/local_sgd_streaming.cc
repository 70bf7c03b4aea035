// LocalSgdAveraging's streaming diloco (Note [Streaming DiLoCo]): the fragments' schedule, their
// exchanges on an engine thread of their own, the delayed outer step with mixing, and their place
// in the checkpoint.
#include <algorithm>
#include <istream>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/binary_stream.h"
#include "kernels/update.h"
#include "plugin/local_sgd_averaging.h"

namespace gw {

namespace {

// True on the thread running a fragment's exchange: its own collectives pass the guard.
thread_local bool t_in_fragment_job = false;

constexpr const char* kLoadContext = "DistributedOptimizer::load_state (streaming diloco)";

}  // namespace

void LocalSgdAveraging::run_fragment_job(std::size_t f) {
  t_in_fragment_job = true;
  try {
    exchange_fragment(f);
  } catch (...) {
    t_in_fragment_job = false;
    throw;
  }
  t_in_fragment_job = false;
}

void LocalSgdAveraging::wait_in_flight() const {
  if (t_in_fragment_job || !streaming_.wait) return;
  streaming_.wait();
}

void LocalSgdAveraging::set_fragment_runner(std::function<void(std::size_t)> launch,
                                            std::function<void()> wait) {
  streaming_.launch = std::move(launch);
  streaming_.wait = std::move(wait);
}

bool LocalSgdAveraging::in_flight() const {
  for (const Fragment& f : streaming_.fragments) {
    if (f.in_flight) return true;
  }
  return false;
}

bool LocalSgdAveraging::use_global() {
  if (!streaming() || !anchor_valid_) return false;
  if (streaming_.own.size() != params_.numel()) {
    streaming_.own = kernels::Buffer<float>(params_.numel(), stream_);
  }
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const ParameterSet::Registered& p = params_[i];
    const std::size_t bytes = p.spec.numel * sizeof(float);
    kernels::copy_bytes(streaming_.own.data() + p.offset, p.spec.value, bytes, stream_);
    kernels::copy_bytes(p.spec.value, anchor_.data() + p.offset, bytes, stream_);
  }
  stream_.synchronize();
  return true;
}

void LocalSgdAveraging::restore_own() {
  if (!streaming() || !anchor_valid_) return;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const ParameterSet::Registered& p = params_[i];
    kernels::copy_bytes(p.spec.value, streaming_.own.data() + p.offset,
                        p.spec.numel * sizeof(float), stream_);
  }
  stream_.synchronize();
}

void LocalSgdAveraging::stream_after(std::int64_t step, const Logger& log) {
  for (std::size_t f = 0; f < streaming_.fragments.size(); ++f) {
    const Fragment& fr = streaming_.fragments[f];
    if (fr.in_flight && fr.started_after + streaming_.settings.delay == step) {
      finish_fragment(f, streaming_.settings.mixing, /*requested=*/false, log);
    }
  }
  for (std::size_t f = 0; f < streaming_.fragments.size(); ++f) {
    if (!fusion::fragment_syncs_after(step, f, streaming_.fragments.size(), policy_.period()))
      continue;
    start_fragment(f, step);
    if (streaming_.settings.delay == 0)
      finish_fragment(f, streaming_.settings.mixing, /*requested=*/false, log);
  }
}

void LocalSgdAveraging::stream_all(std::int64_t step, const Logger& log) {
  for (std::size_t f = 0; f < streaming_.fragments.size(); ++f) {
    if (streaming_.fragments[f].in_flight) finish_fragment(f, 0.0f, /*requested=*/false, log);
  }
  for (std::size_t f = 0; f < streaming_.fragments.size(); ++f) {
    if (streaming_.fragments[f].local_steps == 0) continue;
    start_fragment(f, step);
    finish_fragment(f, 0.0f, /*requested=*/true, log);
  }
  local_steps_since_average_ = 0;
}

void LocalSgdAveraging::start_fragment(std::size_t f, std::int64_t step) {
  Fragment& fr = streaming_.fragments[f];
  for (std::size_t b : fr.buckets) snapshot(b);
  stream_.synchronize();
  fr.in_flight = true;
  fr.started_after = step;
  fr.started_local_steps = fr.local_steps;
  fr.local_steps = 0;
  if (streaming_.launch) {
    streaming_.launch(f);
  } else {
    run_fragment_job(f);
  }
}

void LocalSgdAveraging::exchange_fragment(std::size_t f) {
  Fragment& fr = streaming_.fragments[f];
  const float inv_n = 1.0f / static_cast<float>(comm_.size());
  wire_->begin_step(fr.outer_steps);
  fr.alphas.clear();
  for (std::size_t b : fr.buckets) {
    const compressors::ExchangePlan& plan =
        exchanges_[b].run(comm_, *wire_, buckets_[b], TrafficKind::kParameter);
    // fp16 comes back averaged (each rank sends delta / n); fp32, sparse and low-rank summed.
    std::vector<float> alpha(buckets_[b].tensors.size(), inv_n);
    if (plan.dense_wire == compressors::DenseWire::kFloat16) {
      for (std::size_t pos : plan.dense) alpha[pos] = 1.0f;
    }
    fr.alphas.insert(fr.alphas.end(), alpha.begin(), alpha.end());
  }
  stream_.synchronize();
}

void LocalSgdAveraging::finish_fragment(std::size_t f, float mixing, bool requested,
                                        const Logger& log) {
  wait_in_flight();
  Fragment& fr = streaming_.fragments[f];
  float* flat = flat_.data();
  std::size_t k = 0;
  for (std::size_t b : fr.buckets) {
    for (const auto& t : buckets_[b].tensors) {
      const ParameterSet::Registered& p = params_[t.parameter];
      float* w = p.spec.value;
      if (mixing > 0.0f) {
        kernels::copy_bytes(streaming_.own.data() + p.offset, w, p.spec.numel * sizeof(float),
                            stream_);
      }
      outer_->apply(flat + p.offset, fr.alphas[k++], deltas_, w, anchor_.data() + p.offset,
                    p.offset, p.spec.numel, stream_);
      if (mixing > 0.0f)
        kernels::mix(streaming_.own.data() + p.offset, mixing, w, p.spec.numel, stream_);
    }
  }
  stream_.synchronize();
  outer_->count_step();
  ++fr.outer_steps;
  fr.in_flight = false;
  AveragingPoint point;
  point.step = fr.started_after;
  point.local_steps = fr.started_local_steps;
  point.k = point.next_k = policy_.period();
  point.requested = requested;
  point.fragment = static_cast<std::int64_t>(f);
  stats_.points.push_back(point);
  ++stats_.parameter_exchanges;
  if (log.enabled(LogLevel::kDebug)) {
    log.log(LogLevel::kDebug,
            "step %lld: %s outer step of fragment %zu of %zu (exchanged after step %lld, %lld "
            "local steps, mixing %g)",
            static_cast<long long>(fr.started_after + (requested ? 0 : streaming_.settings.delay)),
            requested ? "requested" : "scheduled", f, streaming_.fragments.size(),
            static_cast<long long>(fr.started_after),
            static_cast<long long>(fr.started_local_steps), static_cast<double>(mixing));
  }
}

// The fragment count (u64); per fragment its outer steps, local steps, whether it is in flight
// (u8), the step after which its exchange began and its local steps then, and, in flight, its
// per-tensor scales and its reduced floats.
void LocalSgdAveraging::save_streaming(std::ostream& out) const {
  using binary::put;
  put<std::uint64_t>(out, streaming_.fragments.size());
  for (const Fragment& fr : streaming_.fragments) {
    put<std::int64_t>(out, fr.outer_steps);
    put<std::int64_t>(out, fr.local_steps);
    put<std::uint8_t>(out, fr.in_flight ? 1 : 0);
    put<std::int64_t>(out, fr.started_after);
    put<std::int64_t>(out, fr.started_local_steps);
    if (!fr.in_flight) continue;
    put<std::uint64_t>(out, fr.alphas.size());
    out.write(reinterpret_cast<const char*>(fr.alphas.data()),
              static_cast<std::streamsize>(fr.alphas.size() * sizeof(float)));
    for (std::size_t b : fr.buckets) {
      std::vector<float> host(buckets_[b].numel);
      kernels::copy_bytes(host.data(), buckets_[b].data, host.size() * sizeof(float), stream_);
      stream_.synchronize();
      out.write(reinterpret_cast<const char*>(host.data()),
                static_cast<std::streamsize>(host.size() * sizeof(float)));
    }
  }
}

std::vector<LocalSgdAveraging::Fragment> LocalSgdAveraging::read_streaming(std::istream& in) const {
  const auto count = binary::get<std::uint64_t>(in, kLoadContext);
  if (count != streaming_.fragments.size()) {
    throw std::runtime_error(std::string(kLoadContext) + ": saved with " + std::to_string(count) +
                             " fragments; this run has " +
                             std::to_string(streaming_.fragments.size()));
  }
  std::vector<Fragment> out(count);
  for (std::size_t f = 0; f < count; ++f) {
    Fragment& fr = out[f];
    fr.outer_steps = binary::get<std::int64_t>(in, kLoadContext);
    fr.local_steps = binary::get<std::int64_t>(in, kLoadContext);
    const auto flag = binary::get<std::uint8_t>(in, kLoadContext);
    fr.started_after = binary::get<std::int64_t>(in, kLoadContext);
    fr.started_local_steps = binary::get<std::int64_t>(in, kLoadContext);
    if (flag > 1 || fr.outer_steps < 0 || fr.local_steps < 0 || fr.started_local_steps < 0) {
      throw std::runtime_error(std::string(kLoadContext) + ": corrupt state of fragment " +
                               std::to_string(f));
    }
    fr.in_flight = flag == 1;
    if (!fr.in_flight) continue;
    std::size_t tensors = 0, floats = 0;
    for (std::size_t b : streaming_.fragments[f].buckets) {
      tensors += buckets_[b].tensors.size();
      floats += buckets_[b].numel;
    }
    const auto n = binary::get<std::uint64_t>(in, kLoadContext);
    if (n != tensors) {
      throw std::runtime_error(std::string(kLoadContext) + ": fragment " + std::to_string(f) +
                               " saved with " + std::to_string(n) + " tensors; this run's has " +
                               std::to_string(tensors));
    }
    fr.alphas.resize(n);
    binary::read_bytes(in, fr.alphas.data(), n * sizeof(float), kLoadContext);
    fr.saved_flat.resize(floats);
    binary::read_bytes(in, fr.saved_flat.data(), floats * sizeof(float), kLoadContext);
  }
  return out;
}

}  // namespace gw
