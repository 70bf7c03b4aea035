// The two-level allreduce (Note [Hierarchical allreduce]) and its node groups (Note [Node groups])
// under a real mpirun: at 4 ranks as 2 nodes x 2 and at 6 as 3 x 2 and 2 x 3 (every local size
// that divides the world size is tried), against the flat allreduce: the same bits where the sums
// are exact, within rounding where they are not, the same bits on every rank, and sizes 0, 1 and
// not divisible by the local size; a local size that does not divide the world is refused.
#include <gtest/gtest.h>

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "plugin/comm/hierarchical_communicator.h"
#include "plugin/comm/mpi/mpi_runtime.h"
#include "plugin/comm/mpi/node_groups.h"
#include "plugin/config/config.h"
#include "plugin/config/params.h"

namespace gw {
namespace {

const std::vector<std::size_t> kCounts = {0, 1, 2, 3, 5, 7, 64, 1000, 1001, 4099};

std::vector<int> local_sizes(int n) {
  std::vector<int> out;
  for (int l = 1; l <= n; ++l) {
    if (n % l == 0) out.push_back(l);
  }
  return out;
}

int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

std::string where(int l, std::size_t count) {
  return "local size " + std::to_string(l) + " of " + std::to_string(world_size()) + " ranks, " +
         std::to_string(count) + " elements";
}

// Whether every rank holds the same bytes (compared as the bytes' maximum and minimum over ranks).
bool same_bytes_everywhere(const void* data, std::size_t bytes) {
  std::vector<std::uint8_t> hi(static_cast<const std::uint8_t*>(data),
                               static_cast<const std::uint8_t*>(data) + bytes);
  std::vector<std::uint8_t> lo = hi;
  const int n = static_cast<int>(bytes);
  if (n > 0) {
    MPI_Allreduce(MPI_IN_PLACE, hi.data(), n, MPI_UINT8_T, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, lo.data(), n, MPI_UINT8_T, MPI_MIN, MPI_COMM_WORLD);
  }
  return hi == lo;
}

// Calls fn(local size, the two-level communicator, the flat one, count) for every local size that
// divides the world size and every count of kCounts.
template <typename Fn>
void for_every_grouping(Fn fn) {
  auto flat = make_mpi_world_communicator();
  for (int l : local_sizes(world_size())) {
    auto h =
        make_hierarchical_mpi_communicator(MPI_COMM_WORLD, find_node_groups(MPI_COMM_WORLD, l));
    for (std::size_t count : kCounts) fn(l, *h, *flat, count);
  }
}

TEST(HierarchicalShards, TileTheBufferInLocalRankOrder) {
  for (int l = 1; l <= 8; ++l) {
    for (std::size_t count : kCounts) {
      std::size_t next = 0;
      for (int i = 0; i < l; ++i) {
        const std::size_t c = HierarchicalCommunicator::shard_count(count, l, i);
        EXPECT_EQ(HierarchicalCommunicator::shard_offset(count, l, i), next) << l << " " << i;
        EXPECT_LE(c, count / l + 1);
        EXPECT_GE(c, count / l);
        next += c;
      }
      EXPECT_EQ(next, count) << "local size " << l;
    }
  }
}

TEST(NodeGroups, FromMpiMatchTheHostNames) {
  const NodeGroups g = find_node_groups(MPI_COMM_WORLD, 0);
  const int n = world_size();
  EXPECT_EQ(g.nodes * g.local_size, n);
  // The ranks of each node share a processor name, and only they do.
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  std::vector<char> names(static_cast<std::size_t>(n) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(), MPI_MAX_PROCESSOR_NAME,
                MPI_CHAR, MPI_COMM_WORLD);
  std::vector<int> node(static_cast<std::size_t>(n));
  const int mine = g.node;
  MPI_Allgather(&mine, 1, MPI_INT, node.data(), 1, MPI_INT, MPI_COMM_WORLD);
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      const bool same_name =
          std::strcmp(&names[static_cast<std::size_t>(a) * MPI_MAX_PROCESSOR_NAME],
                      &names[static_cast<std::size_t>(b) * MPI_MAX_PROCESSOR_NAME]) == 0;
      EXPECT_EQ(node[static_cast<std::size_t>(a)] == node[static_cast<std::size_t>(b)], same_name)
          << "ranks " << a << " and " << b;
    }
  }
}

TEST(NodeGroups, LocalSizeMakesBlocksOfConsecutiveRanks) {
  const int n = world_size();
  const int r = MpiRuntime::world_rank();
  for (int l : local_sizes(n)) {
    const NodeGroups g = find_node_groups(MPI_COMM_WORLD, l);
    EXPECT_EQ(g.nodes, n / l);
    EXPECT_EQ(g.local_size, l);
    EXPECT_EQ(g.node, r / l);
    EXPECT_EQ(g.local_rank, r % l);
  }
}

TEST(NodeGroups, LocalSizeThatDoesNotDivideTheWorldIsRefusedOnEveryRank) {
  const int n = world_size();
  for (int l = 2; l <= n + 1; ++l) {
    if (n % l == 0) continue;
    try {
      find_node_groups(MPI_COMM_WORLD, l);
      FAIL() << "local size " << l << " of " << n << " ranks was accepted";
    } catch (const config::ConfigError& e) {
      EXPECT_NE(
          std::string(e.what()).find("nodes of " + std::to_string(l) + " ranks do not divide the " +
                                     std::to_string(n) + " ranks"),
          std::string::npos)
          << e.what();
    }
  }
}

// Integer-valued floats sum exactly in any order, so the two-level sum has the flat sum's bits.
TEST(HierarchicalAllreduce, ExactSumsEqualTheFlatAllreduceBitForBit) {
  const int r = MpiRuntime::world_rank();
  for_every_grouping([&](int l, Communicator& h, Communicator& flat, std::size_t count) {
    std::vector<float> a(count), b(count);
    std::vector<std::int32_t> ia(count), ib(count);
    std::vector<std::uint16_t> ha(count), hb(count);
    for (std::size_t i = 0; i < count; ++i) {
      a[i] = b[i] = static_cast<float>((r + 1) * 1000 + static_cast<int>(i % 97) - 40);
      ia[i] = ib[i] = (r + 3) * static_cast<std::int32_t>(i) - 5;
      const _Float16 half = static_cast<_Float16>(r + static_cast<int>(i % 7));
      std::memcpy(&ha[i], &half, sizeof half);
      hb[i] = ha[i];
    }
    h.allreduce(a.data(), count, DataType::kFloat32, ReduceOp::kSum, TrafficKind::kGradient);
    flat.allreduce(b.data(), count, DataType::kFloat32, ReduceOp::kSum, TrafficKind::kGradient);
    // Not memcmp: an empty vector's data() may be null, which memcmp must never be given.
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), [](float x, float y) {
      return std::memcmp(&x, &y, sizeof x) == 0;
    })) << where(l, count);
    h.allreduce(ia.data(), count, DataType::kInt32, ReduceOp::kMax, TrafficKind::kControl);
    flat.allreduce(ib.data(), count, DataType::kInt32, ReduceOp::kMax, TrafficKind::kControl);
    EXPECT_EQ(ia, ib) << where(l, count);
    h.allreduce(ha.data(), count, DataType::kFloat16, ReduceOp::kSum, TrafficKind::kGradient);
    flat.allreduce(hb.data(), count, DataType::kFloat16, ReduceOp::kSum, TrafficKind::kGradient);
    EXPECT_EQ(ha, hb) << "float16, " << where(l, count);
  });
}

// Sums that round: within rounding of the flat sum, and the same bits on every rank.
TEST(HierarchicalAllreduce, RoundedSumsAgreeWithFlatAndAreTheSameOnEveryRank) {
  const int r = MpiRuntime::world_rank();
  for_every_grouping([&](int l, Communicator& h, Communicator& flat, std::size_t count) {
    std::mt19937 rng(static_cast<unsigned>(1000 * r + count));
    std::uniform_real_distribution<float> u(0.1f, 1.0f);  // positive: no cancellation
    std::vector<float> a(count);
    for (float& x : a) x = u(rng);
    std::vector<float> b = a;
    std::vector<double> d(a.begin(), a.end());
    h.allreduce(a.data(), count, DataType::kFloat32, ReduceOp::kSum, TrafficKind::kGradient);
    flat.allreduce(b.data(), count, DataType::kFloat32, ReduceOp::kSum, TrafficKind::kGradient);
    flat.allreduce(d.data(), count, DataType::kFloat64, ReduceOp::kSum, TrafficKind::kControl);
    // Counted rather than asserted, so that no rank leaves the loop of collectives early.
    std::size_t off = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const double tol = 1e-6 * d[i];  // n float additions round by at most (n-1) x 2^-24
      if (std::fabs(a[i] - b[i]) > tol || std::fabs(a[i] - d[i]) > tol) ++off;
    }
    EXPECT_EQ(off, 0u) << "elements beyond 1e-6 relative of the flat and the double sums, "
                       << where(l, count);
    EXPECT_TRUE(same_bytes_everywhere(a.data(), count * sizeof(float))) << where(l, count);
  });
}

TEST(HierarchicalAllreduce, RefusesLevelsThatDoNotMultiplyToTheWorld) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  // cross over every rank with local over every rank: size n x n, not n.
  EXPECT_THROW(
      HierarchicalCommunicator(make_mpi_world_communicator(), make_mpi_world_communicator(),
                               make_mpi_world_communicator()),
      std::invalid_argument);
}

// make_mpi_world_communicator under GRADWIRE_HIERARCHICAL and GRADWIRE_HIERARCHY_LOCAL_SIZE
// (Note [Choosing the hierarchy]): auto takes two levels only with several nodes of several ranks,
// 1 insists (and refuses device buffers), 0 stays flat; every form knows the nodes, and the
// world communicator's allreduce sums.
TEST(WorldCommunicator, ChoosesTheHierarchyAsTheSettingsSay) {
  const int n = world_size();
  const auto make = [&](const std::string& setting, int local, bool device, HierarchyChoice& c) {
    config::Config cfg;
    cfg.set(config::keys::kHierarchical, setting);
    cfg.set(config::keys::kHierarchyLocalSize, std::to_string(local));
    return make_mpi_world_communicator(cfg, device, &c);
  };
  for (int l : local_sizes(n)) {
    SCOPED_TRACE(where(l, 0));
    const int nodes = n / l;
    const bool two_levels = nodes > 1 && l > 1;
    HierarchyChoice c;
    auto world = make("auto", l, false, c);
    EXPECT_EQ(c.enabled, two_levels) << c.reason;
    EXPECT_EQ(dynamic_cast<HierarchicalCommunicator*>(world.get()) != nullptr, two_levels);
    EXPECT_EQ(c.nodes, nodes);
    EXPECT_EQ(c.local_size, l);
    EXPECT_NE(c.reason.find(two_levels ? "auto: two levels" : "auto: flat"), std::string::npos)
        << c.reason;
    std::vector<int> expected_nodes;
    for (int r = 0; r < n; ++r) expected_nodes.push_back(r / l);
    EXPECT_EQ(world->node_of_rank(), expected_nodes);
    std::vector<float> v(1001);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(world->rank() + i % 7);
    world->allreduce(v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum,
                     TrafficKind::kGradient);
    for (std::size_t i = 0; i < v.size(); ++i) {
      ASSERT_EQ(v[i], static_cast<float>(n * (n - 1) / 2 + n * static_cast<int>(i % 7))) << i;
    }
    EXPECT_NO_THROW(mpi_info(*world));  // the flat level's MPI, for reports

    auto forced = make("1", l, false, c);
    EXPECT_TRUE(c.enabled);
    EXPECT_NE(dynamic_cast<HierarchicalCommunicator*>(forced.get()), nullptr);
    auto off = make("0", l, false, c);
    EXPECT_FALSE(c.enabled);
    EXPECT_EQ(dynamic_cast<HierarchicalCommunicator*>(off.get()), nullptr);
    EXPECT_EQ(off->node_of_rank(), expected_nodes);
    auto device_auto = make("auto", l, true, c);
    EXPECT_FALSE(c.enabled);
    EXPECT_NE(c.reason.find("CUDA device"), std::string::npos) << c.reason;
    try {
      make("1", l, true, c);
      ADD_FAILURE() << "GRADWIRE_HIERARCHICAL=1 with device buffers was accepted";
    } catch (const config::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("GRADWIRE_HIERARCHICAL=1: the two-level exchange "
                                           "carries host buffers only"),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace gw
