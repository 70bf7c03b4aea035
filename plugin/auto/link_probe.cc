#include "plugin/auto/link_probe.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "plugin/auto/medians.h"

namespace gw {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

std::vector<autotune::ProbePoint> run_probes(
    double latency_s, std::size_t most,
    const std::function<autotune::ProbePoint(std::size_t floats)>& probe) {
  std::vector<autotune::ProbePoint> points;
  for (std::size_t floats = kFirstProbeFloats;; floats = std::min(most, 2 * floats)) {
    points.push_back(probe(floats));
    if (points.back().seconds >= kProbeSeconds || floats >= most ||
        autotune::probes_settled(latency_s, points)) {
      return points;
    }
  }
}

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

LinkMeasurement probe_link(CountingCommunicator& comm, const float* gradients, std::size_t numel,
                           bool across, const kernels::Stream& stream) {
  LinkMeasurement out;
  const TrafficCounters before = comm.counters();
  const auto control_bytes = [&] {
    const TrafficCounters now = comm.counters();
    const TrafficCounters::Kind& k = now[TrafficKind::kControl];
    return static_cast<double>(across ? k.inter_node_sent_bytes : k.sent_bytes);
  };
  comm.barrier();
  kernels::Buffer<float> probe;
  const std::size_t most = std::max(numel, kFirstProbeFloats);
  float* data = probe.reserve_discard(most, stream);
  kernels::copy_bytes(data, gradients, std::min(numel, most) * sizeof(float), stream);
  stream.synchronize();
  std::vector<double> latency(kLatencyProbes);
  for (double& t : latency) {
    const Clock::time_point t0 = Clock::now();
    comm.allreduce(data, 2, DataType::kFloat32, ReduceOp::kSum, TrafficKind::kControl);
    t = seconds_since(t0);
  }
  max_over_ranks(comm, latency, stream);
  const double alpha = median(latency);
  // An idle spell lets a token bucket that shapes the link fill up again.
  std::this_thread::sleep_for(std::chrono::duration<double>(kRefillSeconds));
  out.collectives = kLatencyProbes + 1;
  out.probes = run_probes(alpha, most, [&](std::size_t floats) {
    const double bytes_before = control_bytes();
    const Clock::time_point t0 = Clock::now();
    comm.allreduce(data, floats, DataType::kFloat32, ReduceOp::kSum, TrafficKind::kControl);
    std::vector<double> t = {seconds_since(t0)};
    const double bytes = control_bytes() - bytes_before;
    max_over_ranks(comm, t, stream);
    out.collectives += 2;
    return autotune::ProbePoint{bytes, t[0]};
  });
  out.link = autotune::fit_link(alpha, out.probes);
  out.bytes = comm.counters()[TrafficKind::kControl].sent_bytes -
              before[TrafficKind::kControl].sent_bytes;
  return out;
}

}  // namespace gw
