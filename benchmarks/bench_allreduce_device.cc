// gradwire_bench_allreduce --device cuda: the overhead of gradwire's communicator on CUDA device
// buffers against the bare collective it wraps, side by side in one run (Note [Rotation]).
//
//   mpirun -np 2 gradwire_bench_allreduce --device cuda [--report allreduce_cuda.json]
//
// Each rank's buffers are on its node-local rank's device (modulo the node's device count), and
// its communicator is the one make_world_communicator makes for device buffers
// (Note [Choosing the backend]: NCCL when every rank has a GPU of its own, else MPI staging through
// pinned host memory; GRADWIRE_BACKEND may ask for one). For each size, two paths are timed in
// rotation (barrier, time one call, per iteration) and the medians of the slowest rank compared:
//   gw    CountingCommunicator::allreduce (sum, float32, kGradient) on the device buffer: the
//         counters, the backend's checks, and for NCCL its event and asynchronous-error polling.
//   bare  the same collective without gradwire: for NCCL, ncclAllReduce on a communicator of its
//         own (BareNcclAllreduce, plugin/comm/nccl/) then a stream synchronisation; for MPI
//         staging, the device buffer copied into pinned host memory, MPI_Allreduce(MPI_IN_PLACE)
//         on that host copy, and the result copied back.
// A separate, untimed pass checks both results exactly (#wrong); the timed calls sum zeros.
#include "benchmarks/bench_allreduce_device.h"

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/device.h"
#include "kernels/stream.h"
#include "plugin/comm/counting_communicator.h"
#include "plugin/comm/nccl/bare_nccl_allreduce.h"
#include "plugin/comm/world_communicator.h"
#include "plugin/config/config.h"

namespace gw::bench {
namespace {

constexpr const char* kMethod =
    "CUDA device buffers; median over rotating iterations of the slowest rank's time (barrier, "
    "one call, which returns when its result is in the buffer); gradwire = the "
    "CountingCommunicator over make_world_communicator(device buffers): allreduce(sum, float32); "
    "bare = ncclAllReduce on an NCCL communicator of its own + stream synchronisation (NCCL "
    "backend), or device-to-pinned-host copy + MPI_Allreduce(MPI_IN_PLACE) on the host copy + "
    "copy back (MPI staging backend); timed calls sum zeros, an untimed pass checks exact sums";

constexpr std::size_t kVerdictMinBytes = std::size_t{16} << 20;

// The ranks (world ranks, comma-separated) where no CUDA device is usable; empty when every rank
// has one. Collective.
std::string ranks_without_device(int size) {
  const int mine = kernels::cuda_device_available() ? 1 : 0;
  std::vector<int> all(static_cast<std::size_t>(size));
  MPI_Allgather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
  std::string out;
  for (int r = 0; r < size; ++r) {
    if (all[static_cast<std::size_t>(r)] == 0) out += (out.empty() ? "" : ", ") + std::to_string(r);
  }
  return out;
}

int node_local_rank() {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int local = 0;
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  return local;
}

// The bare collective of the backend gradwire picked: sums `count` floats of device memory in
// place and returns when the result is there.
class BareAllreduce {
 public:
  BareAllreduce(Backend backend, const kernels::Stream& stream) : stream_(stream) {
    if (backend == Backend::kNccl)
      nccl_ = std::make_unique<BareNcclAllreduce>(MPI_COMM_WORLD, stream);
  }
  const char* name() const {
    return nccl_ ? "ncclAllReduce" : "MPI_Allreduce on a pinned host copy";
  }
  void sum_in_place(float* buffer, std::size_t count) {
    if (nccl_) return nccl_->sum_in_place(buffer, count);
    float* host = staging_.reserve_discard(count);
    kernels::copy_bytes(host, buffer, count * sizeof(float), stream_);
    stream_.synchronize();
    MPI_Allreduce(MPI_IN_PLACE, host, static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    kernels::copy_bytes(buffer, host, count * sizeof(float), stream_);
    stream_.synchronize();
  }

 private:
  kernels::Stream stream_;
  std::unique_ptr<BareNcclAllreduce> nccl_;
  kernels::PinnedBuffer<float> staging_;
};

// Whether every rank has a usable CUDA device; if not, rank 0 says which do not. Collective.
bool every_rank_has_device(int size, int rank) {
  const std::string without = ranks_without_device(size);
  if (without.empty()) return true;
  if (rank == 0) {
    std::fprintf(stderr,
                 "gradwire_bench_allreduce: --device cuda: no usable CUDA device on rank(s) %s "
                 "(the CUDA runtime sees none, or gradwire was built without CUDA); --device "
                 "cpu runs on host buffers\n",
                 without.c_str());
  }
  return false;
}

// One size's figures: the medians of both paths and the untimed check's wrong elements.
struct SizeTimes {
  std::size_t bytes = 0, count = 0;
  int iterations = 0;
  double gw_s = 0, bare_s = 0;
  std::int64_t wrong = 0;
};

// The two paths on device buffers of one size, and where they run.
struct DevicePaths {
  CountingCommunicator& comm;
  BareAllreduce& bare;
  const kernels::Stream& stream;

  // Untimed: rank r contributes r + 1 + (i % 5); the sum is exact in fp32. Both buffers are
  // summed and checked; returns the elements wrong, summed over ranks.
  std::int64_t count_wrong(kernels::Buffer<float>& gw_buffer, kernels::Buffer<float>& bare_buffer,
                           std::size_t count, int rank, int n) {
    const std::size_t bytes = count * sizeof(float);
    std::vector<float> host(count);
    for (std::size_t i = 0; i < count; ++i) host[i] = static_cast<float>(rank + 1 + i % 5);
    kernels::copy_bytes(gw_buffer.data(), host.data(), bytes, stream);
    kernels::copy_bytes(bare_buffer.data(), host.data(), bytes, stream);
    stream.synchronize();
    comm.allreduce(gw_buffer.data(), count, DataType::kFloat32, ReduceOp::kSum,
                   TrafficKind::kGradient);
    bare.sum_in_place(bare_buffer.data(), count);
    std::int64_t wrong = 0;
    for (const kernels::Buffer<float>* b : {&gw_buffer, &bare_buffer}) {
      kernels::copy_bytes(host.data(), b->data(), bytes, stream);
      stream.synchronize();
      for (std::size_t i = 0; i < count; ++i) {
        wrong += host[i] != static_cast<float>(n * (n + 1) / 2 + n * static_cast<int>(i % 5));
      }
    }
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    return wrong;
  }

  // Checked, then timed in rotation on zeros: sums of zeros stay zeros, so nothing needs
  // refilling.
  SizeTimes measure(std::size_t bytes, double budget_s, int rank, int n) {
    SizeTimes t;
    t.bytes = bytes;
    t.count = bytes / sizeof(float);
    const std::size_t count = t.count;
    kernels::Buffer<float> gw_buffer(count, stream), bare_buffer(count, stream);
    t.wrong = count_wrong(gw_buffer, bare_buffer, count, rank, n);

    kernels::fill_zero(gw_buffer.data(), bytes, stream);
    kernels::fill_zero(bare_buffer.data(), bytes, stream);
    stream.synchronize();
    enum { kGw, kBare };
    const Variants variants = {{"gw",
                                [&] {
                                  comm.allreduce(gw_buffer.data(), count, DataType::kFloat32,
                                                 ReduceOp::kSum, TrafficKind::kGradient);
                                }},
                               {"bare", [&] { bare.sum_in_place(bare_buffer.data(), count); }}};
    t.iterations = iterations_for_size(variants, kBare, budget_s);
    const std::vector<double> med = rotate_medians(variants, t.iterations, {});
    t.gw_s = med[kGw];
    t.bare_s = med[kBare];
    return t;
  }
};

void print_header(int n, const BackendChoice& choice, const BareAllreduce& bare) {
  std::printf(
      "# gradwire_bench_allreduce --device cuda: %d ranks, float32 sum of CUDA device buffers; "
      "gradwire: %s (%s); bare: %s\n",
      n, to_string(choice.backend), choice.reason.c_str(), bare.name());
  std::printf("# %12s %10s | %10s %8s %8s | %10s %8s %8s | %6s %6s\n", "size(B)", "count",
              "gw(us)", "algbw", "busbw", "bare(us)", "algbw", "busbw", "ratio", "#wrong");
}

void print_row(const SizeTimes& t, double bus_factor) {
  const double gw_alg = t.bytes / t.gw_s / 1e9, bare_alg = t.bytes / t.bare_s / 1e9;
  std::printf("  %12zu %10zu | %10.1f %8.3f %8.3f | %10.1f %8.3f %8.3f | %6.3f %6lld\n", t.bytes,
              t.count, t.gw_s * 1e6, gw_alg, gw_alg * bus_factor, t.bare_s * 1e6, bare_alg,
              bare_alg * bus_factor, t.gw_s / t.bare_s, static_cast<long long>(t.wrong));
  std::fflush(stdout);
}

nlohmann::json row_json(const SizeTimes& t, double bus_factor) {
  const double gw_alg = t.bytes / t.gw_s / 1e9, bare_alg = t.bytes / t.bare_s / 1e9;
  return {{"bytes", t.bytes},
          {"count", t.count},
          {"iterations", t.iterations},
          {"gradwire_seconds", t.gw_s},
          {"bare_seconds", t.bare_s},
          {"ratio", t.gw_s / t.bare_s},
          {"gradwire_algbw_gbps", gw_alg},
          {"gradwire_busbw_gbps", gw_alg * bus_factor},
          {"bare_algbw_gbps", bare_alg},
          {"bare_busbw_gbps", bare_alg * bus_factor},
          {"wrong", t.wrong}};
}

}  // namespace

int run_allreduce_on_cuda(const MpiBench& bench, const AllreduceSettings& s) {
  const int n = bench.size(), rank = bench.rank();
  if (!every_rank_has_device(n, rank)) return 2;
  const int device = node_local_rank() % kernels::cuda_device_count();
  BackendChoice choice;
  const auto comm = std::make_shared<CountingCommunicator>(
      make_world_communicator(config::Config::from_environment(), Device::kCuda, device, &choice));
  const kernels::Stream stream = kernels::Stream::cuda(device);
  stream.make_current();
  BareAllreduce bare(choice.backend, stream);
  DevicePaths paths{*comm, bare, stream};
  const double bus_factor = allreduce_bus_factor(n);
  if (rank == 0) print_header(n, choice, bare);

  nlohmann::json rows = nlohmann::json::array();
  double max_ratio = 0;
  bool any_verdict_size = false;
  std::int64_t wrong_total = 0;
  for (std::size_t bytes = s.min_bytes; bytes <= s.max_bytes; bytes *= 2) {
    const SizeTimes t = paths.measure(bytes, s.seconds_per_size, rank, n);
    wrong_total += t.wrong;
    if (bytes >= kVerdictMinBytes) {
      any_verdict_size = true;
      max_ratio = std::max(max_ratio, t.gw_s / t.bare_s);
    }
    if (rank == 0) print_row(t, bus_factor);
    rows.push_back(row_json(t, bus_factor));
  }
  std::vector<Target> targets = {no_wrong_elements(wrong_total)};
  if (any_verdict_size) {
    targets.push_back(at_most(format("max gw / bare at or above 16 MB: %.3f", max_ratio), max_ratio,
                              1.05, "ratio_at_or_above_16MB_max", "ratio_at_or_above_16MB_met"));
  } else if (rank == 0) {
    std::printf("# no size at or above 16 MB (--max-bytes): no overhead verdict\n");
  }
  return bench.conclude(targets, kMethod,
                        {{"device", "cuda"},
                         {"backend", to_string(choice.backend)},
                         {"backend_reason", choice.reason},
                         {"bare", bare.name()},
                         {"busbw_factor", bus_factor},
                         {"rows", rows},
                         {"max_ratio_at_or_above_16MB", max_ratio},
                         {"wrong", wrong_total}});
}

}  // namespace gw::bench
