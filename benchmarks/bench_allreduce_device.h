// gradwire_bench_allreduce --device cuda: gradwire's communicator on CUDA device buffers against
// the bare collective (bench_allreduce_device.cc).
#pragma once

#include <cstddef>

#include "benchmarks/bench_mpi_driver.h"

namespace gw::bench {

// The command line of gradwire_bench_allreduce that the device mode uses.
struct AllreduceSettings {
  std::size_t min_bytes = 4096;
  std::size_t max_bytes = std::size_t{64} << 20;
  double seconds_per_size = 1.0;
};

// The device mode, on every rank of `bench`; returns the exit code: 2 on every rank, with a
// message from rank 0, where some rank has no usable CUDA device (a build without CUDA included).
int run_allreduce_on_cuda(const MpiBench& bench, const AllreduceSettings& settings);

}  // namespace gw::bench
