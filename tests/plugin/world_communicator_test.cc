// GRADWIRE_BACKEND and make_world_communicator under a real mpirun (1 and 2 ranks): what auto
// picks and why, nccl refused with every reason it cannot work (the same error on every rank,
// before any communicator exists), and ranks that ask for different backends. The expectations
// that depend on the machine (a GPU or not, NCCL in the build or not) are written for each case.
#include <gtest/gtest.h>

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/device.h"
#include "kernels/stream.h"
#include "plugin/comm/counting_communicator.h"
#include "plugin/comm/mpi/mpi_runtime.h"
#include "plugin/comm/nccl/make_nccl_communicator.h"
#include "plugin/comm/world_communicator.h"
#include "plugin/config/config.h"
#include "plugin/config/params.h"

namespace gw {
namespace {

config::Config with_backend(const std::string& value) {
  config::Config config;
  config.set(config::keys::kBackend, value);
  return config;
}

int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

// "no CUDA device on rank 0" / "on ranks 0, 1, ...", as the factory words it.
std::string no_device_on_every_rank() {
  const int n = world_size();
  std::string text = n > 1 ? "no CUDA device on ranks " : "no CUDA device on rank ";
  for (int r = 0; r < n; ++r) text += (r > 0 ? ", " : "") + std::to_string(r);
  return text;
}

std::string without_nccl_prefix() {
  return nccl_built() ? "" : "gradwire was built without NCCL; ";
}

constexpr const char* kHostReason =
    "the buffers are in host memory (NCCL moves CUDA device memory only)";

TEST(WorldBackend, ParsesItsValuesAndListsThemOtherwise) {
  EXPECT_EQ(parse_backend("auto"), Backend::kAuto);
  EXPECT_EQ(parse_backend("mpi"), Backend::kMpi);
  EXPECT_EQ(parse_backend("nccl"), Backend::kNccl);
  try {
    parse_backend("gloo");
    FAIL() << "gloo was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "backend 'gloo' is not one of: auto, mpi, nccl");
  }
  try {
    with_backend("gloo");
    FAIL() << "GRADWIRE_BACKEND=gloo was accepted";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("accepted: one of: auto, mpi, nccl"), std::string::npos)
        << e.what();
  }
}

TEST(WorldBackend, AutoWithHostBuffersIsMpi) {
  const BackendChoice choice = choose_world_backend(with_backend("auto"), Device::kHost);
  EXPECT_EQ(choice.backend, Backend::kMpi);
  EXPECT_EQ(choice.cuda_device, -1);
  if (!kernels::cuda_device_available()) {
    EXPECT_EQ(choice.reason, "auto: mpi, as " + without_nccl_prefix() + kHostReason + "; " +
                                 no_device_on_every_rank());
  } else {
    EXPECT_NE(choice.reason.find(kHostReason), std::string::npos) << choice.reason;
  }
  // And the communicator it makes is MPI's, working.
  BackendChoice made;
  const std::unique_ptr<Communicator> world =
      make_world_communicator(with_backend("auto"), Device::kHost, -1, &made);
  EXPECT_EQ(made.backend, Backend::kMpi);
  EXPECT_NO_THROW(mpi_info(*world));
  int one = 1;
  world->allreduce(&one, 1, DataType::kInt32, ReduceOp::kSum, TrafficKind::kControl);
  EXPECT_EQ(one, world->size());
}

TEST(WorldBackend, AutoWithoutADeviceIsMpiEvenForDeviceBuffers) {
  if (kernels::cuda_device_available()) GTEST_SKIP() << "this machine has a CUDA device";
  const BackendChoice choice = choose_world_backend(with_backend("auto"), Device::kCuda);
  EXPECT_EQ(choice.backend, Backend::kMpi);
  EXPECT_EQ(choice.reason, "auto: mpi, as " + without_nccl_prefix() + no_device_on_every_rank());
}

TEST(WorldBackend, MpiIsWhatItSays) {
  const BackendChoice choice = choose_world_backend(with_backend("mpi"), Device::kCuda);
  EXPECT_EQ(choice.backend, Backend::kMpi);
  EXPECT_EQ(choice.reason, "GRADWIRE_BACKEND=mpi");
}

// Every rank throws the same ConfigError, before any communicator is made.
TEST(WorldBackend, NcclWhereItCannotWorkSaysWhyOnEveryRank) {
  try {
    make_world_communicator(with_backend("nccl"), Device::kHost);
    FAIL() << "nccl with host buffers was accepted";
  } catch (const config::ConfigError& e) {
    EXPECT_TRUE(e.thrown_on_every_rank());
    EXPECT_TRUE(e.same_on_every_rank());
    const std::string reasons =
        without_nccl_prefix() + kHostReason +
        (kernels::cuda_device_available() ? "" : "; " + no_device_on_every_rank());
    if (!kernels::cuda_device_available() || world_size() == 1) {
      EXPECT_EQ(std::string(e.what()),
                "GRADWIRE_BACKEND=nccl cannot work here: " + reasons +
                    ". Use GRADWIRE_BACKEND=mpi (it carries device buffers too, staged through "
                    "host memory) or GRADWIRE_BACKEND=auto");
    } else {
      EXPECT_NE(std::string(e.what()).find(kHostReason), std::string::npos) << e.what();
    }
  }
  if (!kernels::cuda_device_available()) {
    try {
      choose_world_backend(with_backend("nccl"), Device::kCuda);
      FAIL() << "nccl without a CUDA device was accepted";
    } catch (const config::ConfigError& e) {
      EXPECT_EQ(std::string(e.what()),
                "GRADWIRE_BACKEND=nccl cannot work here: " + without_nccl_prefix() +
                    no_device_on_every_rank() +
                    ". Use GRADWIRE_BACKEND=mpi (it carries device buffers too, staged through "
                    "host memory) or GRADWIRE_BACKEND=auto");
    }
  }
}

// The NCCL entry point refuses what it cannot use before any NCCL call: in a build without NCCL,
// everything; in one with it, a host stream.
TEST(WorldBackend, NcclEntryPointSaysWhatIsMissing) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  try {
    make_nccl_communicator(MPI_COMM_WORLD, kernels::Stream::host());
    FAIL() << "an NCCL communicator on the host was made";
  } catch (const CommError& e) {
    if (nccl_built()) {
      EXPECT_EQ(std::string(e.what()),
                "NcclCommunicator on rank " + std::to_string(rank) +
                    ": needs a CUDA stream (NCCL runs its collectives on a device), got the host");
    } else {
      EXPECT_EQ(std::string(e.what()),
                "the NCCL backend is unavailable: gradwire was built without NCCL (it needs CUDA "
                "and NCCL at configure time); use the MPI backend (GRADWIRE_BACKEND=mpi), which "
                "also carries CUDA device buffers, staged through host memory");
    }
  }
}

TEST(WorldBackend, RanksAskingForDifferentBackendsFailTogether) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  try {
    choose_world_backend(with_backend(rank == 1 ? "mpi" : "auto"), Device::kHost);
    FAIL() << "different backends were accepted";
  } catch (const config::ConfigError& e) {
    EXPECT_TRUE(e.same_on_every_rank());
    EXPECT_EQ(std::string(e.what()),
              "GRADWIRE_BACKEND differs across ranks (rank 0 'auto', rank 1 'mpi'): every rank "
              "must use the same backend. Set the same value on every rank (accepted: auto, mpi, "
              "nccl)");
  }
}

// Note [Settings that shape a communicator]: ranks that differ on how the world communicator is
// built fail together, before any collective that depends on the setting, and stay in step.
TEST(WorldCommunicator, RanksDifferingOnASettingThatShapesItFailTogether) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  struct Case {
    const char* key;
    const char* on_rank_0;
    const char* elsewhere;
  };
  for (const Case& c : {Case{config::keys::kHierarchical, "0", "1"},
                        Case{config::keys::kHierarchyLocalSize, "0", "2"},
                        Case{config::keys::kMpiWait, "block", "yield"}}) {
    config::Config config;
    config.set(c.key, rank == 0 ? c.on_rank_0 : c.elsewhere);
    try {
      make_mpi_world_communicator(config);
      ADD_FAILURE() << c.key << " differing across ranks was accepted";
    } catch (const config::ConfigError& e) {
      EXPECT_TRUE(e.same_on_every_rank());
      EXPECT_EQ(std::string(e.what()),
                std::string(c.key) + " differs across ranks (rank 0 '" + c.on_rank_0 +
                    "', rank 1 '" + c.elsewhere +
                    "'): it shapes the world communicator, which every rank must build alike. "
                    "Set the same value on every rank");
    }
  }
  const std::unique_ptr<Communicator> comm = make_mpi_world_communicator(config::Config{});
  comm->barrier();  // still in step
}

// Note [Host buffers beside NCCL]: host buffers, and blocks empty on some ranks, go to the host
// communicator, with the results of its collectives. (Device buffers to the device communicator:
// NcclGpu.WorldCommunicatorCarriesHostControlMessagesBesideNccl in comm_gpu_test.)
TEST(RoutedCommunicator, HostBuffersGoToTheHostCommunicator) {
  auto device = std::make_unique<CountingCommunicator>(make_mpi_world_communicator());
  auto host = std::make_unique<CountingCommunicator>(make_mpi_world_communicator());
  const CountingCommunicator& device_counts = *device;
  const CountingCommunicator& host_counts = *host;
  const std::unique_ptr<Communicator> routed =
      make_routed_communicator(std::move(device), std::move(host));
  const int n = routed->size(), r = routed->rank();
  std::vector<float> x = {static_cast<float>(r + 1)};
  routed->allreduce(x.data(), 1, DataType::kFloat32, ReduceOp::kSum, TrafficKind::kControl);
  EXPECT_EQ(x[0], static_cast<float>(n * (n + 1) / 2));
  routed->allreduce_async(x.data(), 1, DataType::kFloat32, ReduceOp::kMax, TrafficKind::kControl)
      ->wait();
  EXPECT_EQ(x[0], static_cast<float>(n * (n + 1) / 2));
  // Rank 0 sends nothing (a null block), the others one value each: routed alike on every rank.
  std::vector<std::int32_t> mine;
  if (r > 0) mine.push_back(r);
  std::vector<std::size_t> counts(n, 1);
  counts[0] = 0;
  std::vector<std::int32_t> all(n - 1, -1);
  routed->allgatherv(r > 0 ? mine.data() : nullptr, mine.size(), all.empty() ? nullptr : all.data(),
                     counts, DataType::kInt32, TrafficKind::kControl);
  for (int i = 1; i < n; ++i) EXPECT_EQ(all[i - 1], i);
  std::int64_t root_value = r == 0 ? 42 : 0;
  routed->broadcast(&root_value, 1, DataType::kInt64, 0, TrafficKind::kControl);
  EXPECT_EQ(root_value, 42);
  routed->barrier();
  EXPECT_EQ(host_counts.counters()[TrafficKind::kControl].calls, 4u);
  EXPECT_EQ(device_counts.counters()[TrafficKind::kControl].calls, 0u);
}

// An alltoallv on host buffers goes to the host communicator too, blocking and async: rank s sends
// rank q the q + 1 values 100 s + q (rank 0 receives one value from each rank, the last rank n).
TEST(RoutedCommunicator, HostAlltoallvGoesToTheHostCommunicator) {
  auto device = std::make_unique<CountingCommunicator>(make_mpi_world_communicator());
  auto host = std::make_unique<CountingCommunicator>(make_mpi_world_communicator());
  const CountingCommunicator& device_counts = *device;
  const CountingCommunicator& host_counts = *host;
  const std::unique_ptr<Communicator> routed =
      make_routed_communicator(std::move(device), std::move(host));
  const int n = routed->size(), r = routed->rank();
  std::vector<std::size_t> send_counts(n), recv_counts(n, static_cast<std::size_t>(r) + 1);
  std::vector<std::int32_t> send;
  for (int q = 0; q < n; ++q) {
    send_counts[q] = static_cast<std::size_t>(q) + 1;
    send.insert(send.end(), send_counts[q], 100 * r + q);
  }
  std::vector<std::int32_t> expected;
  for (int q = 0; q < n; ++q) expected.insert(expected.end(), recv_counts[q], 100 * q + r);
  for (bool async : {false, true}) {
    SCOPED_TRACE(async ? "async" : "blocking");
    std::vector<std::int32_t> recv(expected.size(), -1);
    if (async) {
      routed
          ->alltoallv_async(send.data(), send_counts, recv.data(), recv_counts, DataType::kInt32,
                            TrafficKind::kControl)
          ->wait();
    } else {
      routed->alltoallv(send.data(), send_counts, recv.data(), recv_counts, DataType::kInt32,
                        TrafficKind::kControl);
    }
    EXPECT_EQ(recv, expected);
  }
  EXPECT_EQ(host_counts.counters()[TrafficKind::kControl].calls, 2u);
  EXPECT_EQ(device_counts.counters()[TrafficKind::kControl].calls, 0u);
}

}  // namespace
}  // namespace gw
