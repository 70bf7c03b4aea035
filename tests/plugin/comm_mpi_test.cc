// The MPI communicator and its byte counters under a real mpirun (2, 3 and 4 ranks): exact
// closed-form results, and counters equal to the bytes of Note [What the counters count]; float16
// all-reduces against references written with _Float16 (Note [float16 all-reduce]); how ranks wait
// (Note [Waiting for MPI]). CTest runs the binary a second time with GRADWIRE_MPI_WAIT=yield, so
// every collective here is also checked through the polled, non-blocking path.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <sched.h>

#include "kernels/half.h"
#include "plugin/comm/counting_communicator.h"
#include "plugin/comm/mpi/mpi_communicator.h"
#include "plugin/comm/mpi/mpi_runtime.h"
#include "plugin/comm/staging_communicator.h"
#include "plugin/config/registry.h"

namespace gw {
namespace {

class CommTest : public ::testing::TestWithParam<std::size_t> {
 protected:
  void SetUp() override {
    comm_ = std::make_unique<CountingCommunicator>(make_mpi_world_communicator());
    n_ = comm_->size();
    r_ = comm_->rank();
  }
  std::unique_ptr<CountingCommunicator> comm_;
  int n_ = 1, r_ = 0;
};

// The bytes of one allreduce, written independently of the implementation: rank r owns chunk r of
// the count split n ways, sends the other n-1 chunks once and its own chunk n-1 times.
std::uint64_t expected_allreduce_bytes(std::size_t count, std::size_t elem, int r, int n) {
  if (n == 1) return 0;
  std::vector<std::uint64_t> chunk(n, count / n);
  for (std::size_t i = 0; i < count % n; ++i) ++chunk[i];
  return ((count - chunk[r]) + (n - 1) * chunk[r]) * elem;
}

TEST_P(CommTest, AllreduceSumIsExactAndCounted) {
  const std::size_t count = GetParam();
  std::vector<float> buf(count);
  for (std::size_t i = 0; i < count; ++i) buf[i] = static_cast<float>(r_ + static_cast<int>(i % 3));
  comm_->allreduce(buf.data(), count, DataType::kFloat32, ReduceOp::kSum, TrafficKind::kGradient);
  for (std::size_t i = 0; i < count; ++i) {
    const float expected = static_cast<float>(n_ * (n_ - 1) / 2 + n_ * static_cast<int>(i % 3));
    ASSERT_EQ(buf[i], expected) << "at " << i;
  }
  const auto c = comm_->counters();
  const std::uint64_t bytes = expected_allreduce_bytes(count, 4, r_, n_);
  EXPECT_EQ(c[TrafficKind::kGradient].sent_bytes, bytes);
  EXPECT_EQ(c[TrafficKind::kGradient].received_bytes, bytes);
  EXPECT_EQ(c[TrafficKind::kGradient].calls, 1u);
  EXPECT_EQ(c[TrafficKind::kParameter].sent_bytes, 0u);

  // Summed over ranks this is the ring allreduce's 2(n-1) x bytes.
  std::int64_t sent = static_cast<std::int64_t>(bytes);
  comm_->allreduce(&sent, 1, DataType::kInt64, ReduceOp::kSum, TrafficKind::kControl);
  EXPECT_EQ(sent, static_cast<std::int64_t>(2 * (n_ - 1) * count * 4));
}

TEST_P(CommTest, AllgathervPlacesEveryBlockInRankOrder) {
  const std::size_t base = GetParam();
  std::vector<std::size_t> counts(n_);
  for (int r = 0; r < n_; ++r) counts[r] = base + static_cast<std::size_t>(r);  // uneven blocks
  const std::size_t mine = counts[r_];
  std::vector<std::int32_t> send(mine);
  for (std::size_t j = 0; j < mine; ++j) send[j] = r_ * 1000000 + static_cast<std::int32_t>(j);
  const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
  std::vector<std::int32_t> recv(total, -1);
  comm_->allgatherv(send.data(), mine, recv.data(), counts, DataType::kInt32,
                    TrafficKind::kParameter);
  std::size_t at = 0;
  for (int r = 0; r < n_; ++r) {
    for (std::size_t j = 0; j < counts[r]; ++j, ++at) {
      ASSERT_EQ(recv[at], r * 1000000 + static_cast<std::int32_t>(j));
    }
  }
  const auto c = comm_->counters()[TrafficKind::kParameter];
  EXPECT_EQ(c.sent_bytes, static_cast<std::uint64_t>(n_ - 1) * mine * 4);
  EXPECT_EQ(c.received_bytes, (total - mine) * 4);
}

// alltoallv: rank s sends ((s + 2q) % 3) x base elements to rank q, so blocks of 0, 1 and 2 x base
// elements occur, and what s sends q differs from what q sends s. Element i of that block is
// encode(s, q, i), so a block placed at the wrong offset, taken from the wrong rank or cut short
// is caught.
std::size_t alltoallv_count(int from, int to, std::size_t base) {
  return static_cast<std::size_t>((from + 2 * to) % 3) * base;
}

// int32: s, q and i in full (i < 2^24, s and q < 8).
std::int32_t alltoallv_int(int from, int to, std::size_t i) {
  return (from * 8 + to) << 24 | static_cast<std::int32_t>(i);
}

// float32: integers below 2^24, so exact; i modulo 4096 (the int32 run checks i in full).
float alltoallv_float(int from, int to, std::size_t i) {
  return static_cast<float>((from * 8 + to) * 4096 + static_cast<int>(i % 4096));
}

template <class T, class Encode>
void check_alltoallv(CountingCommunicator& comm, std::size_t base, DataType type, bool async,
                     Encode encode) {
  const int n = comm.size(), r = comm.rank();
  std::vector<std::size_t> send_counts(n), recv_counts(n);
  std::vector<T> send, expected;
  for (int q = 0; q < n; ++q) {
    send_counts[q] = alltoallv_count(r, q, base);
    recv_counts[q] = alltoallv_count(q, r, base);
    for (std::size_t i = 0; i < send_counts[q]; ++i) send.push_back(encode(r, q, i));
    for (std::size_t i = 0; i < recv_counts[q]; ++i) expected.push_back(encode(q, r, i));
  }
  std::vector<T> recv(expected.size(), T(-1));
  comm.reset();
  if (async) {
    comm.alltoallv_async(send.data(), send_counts, recv.data(), recv_counts, type,
                         TrafficKind::kGradient)
        ->wait();
  } else {
    comm.alltoallv(send.data(), send_counts, recv.data(), recv_counts, type,
                   TrafficKind::kGradient);
  }
  for (std::size_t at = 0; at < expected.size(); ++at) {
    ASSERT_EQ(recv[at], expected[at]) << "at " << at;
  }
  // Note [What the counters count]: every block but the one this rank keeps.
  std::uint64_t sent = 0, received = 0;
  for (int q = 0; q < n; ++q) {
    if (q == r) continue;
    sent += send_counts[q] * sizeof(T);
    received += recv_counts[q] * sizeof(T);
  }
  const auto c = comm.counters()[TrafficKind::kGradient];
  EXPECT_EQ(c.sent_bytes, sent);
  EXPECT_EQ(c.received_bytes, received);
  EXPECT_EQ(c.calls, 1u);
}

TEST_P(CommTest, AlltoallvPlacesEachRanksBlockForThisRank) {
  const std::size_t base = GetParam();
  for (bool async : {false, true}) {
    SCOPED_TRACE(async ? "async" : "blocking");
    check_alltoallv<std::int32_t>(*comm_, base, DataType::kInt32, async, alltoallv_int);
    check_alltoallv<float>(*comm_, base, DataType::kFloat32, async, alltoallv_float);
  }
}

TEST_P(CommTest, BroadcastFromTheLastRank) {
  const std::size_t count = GetParam();
  const int root = n_ - 1;
  std::vector<double> buf(count, r_ == root ? 0.0 : -1.0);
  if (r_ == root) std::iota(buf.begin(), buf.end(), 0.5);
  comm_->broadcast(buf.data(), count, DataType::kFloat64, root, TrafficKind::kControl);
  for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(buf[i], static_cast<double>(i) + 0.5);
  const auto c = comm_->counters()[TrafficKind::kControl];
  if (r_ == root) {
    EXPECT_EQ(c.sent_bytes, static_cast<std::uint64_t>(n_ - 1) * count * 8);
    EXPECT_EQ(c.received_bytes, 0u);
  } else {
    EXPECT_EQ(c.sent_bytes, 0u);
    EXPECT_EQ(c.received_bytes, count * 8);
  }
}

INSTANTIATE_TEST_SUITE_P(Counts, CommTest, ::testing::Values(0, 1, 7, 1000, 1000003),
                         [](const auto& info) { return "n" + std::to_string(info.param); });

// --- float16 all-reduce (Note [float16 all-reduce] in half_ops.cc) ---
// The references use GCC's _Float16 conversions, not the kernels that the MPI ops use.

Half to_half(float f) {
  const _Float16 h = static_cast<_Float16>(f);
  Half out;
  std::memcpy(&out, &h, sizeof out);
  return out;
}

float to_float(Half h) {
  _Float16 f;
  std::memcpy(&f, &h, sizeof f);
  return static_cast<float>(f);
}

Half bits(std::uint16_t b) { return Half{b}; }

// One pairwise combine of the sum, as a reader expects it: round_half(float(a) + float(b)).
Half half_add(Half a, Half b) { return to_half(to_float(a) + to_float(b)); }

constexpr std::uint16_t kCanonicalNaN = 0x7E00;

void allreduce_half(Communicator& comm, std::vector<Half>& buf, ReduceOp op, bool async) {
  if (async) {
    comm.allreduce_async(buf.data(), buf.size(), DataType::kFloat16, op, TrafficKind::kGradient)
        ->wait();
  } else {
    comm.allreduce(buf.data(), buf.size(), DataType::kFloat16, op, TrafficKind::kGradient);
  }
}

// Every rank's result, gathered: rank r's copy of element i is at r * count + i.
std::vector<Half> gather_all(Communicator& comm, const std::vector<Half>& mine) {
  std::vector<Half> all(mine.size() * static_cast<std::size_t>(comm.size()));
  comm.allgatherv(mine.data(), mine.size(), all.data(),
                  std::vector<std::size_t>(static_cast<std::size_t>(comm.size()), mine.size()),
                  DataType::kFloat16, TrafficKind::kControl);
  return all;
}

// A random finite, non-zero half whose exponent field is in [lo, hi] (1..30 normal, 0 subnormal).
Half random_half(std::mt19937& rng, int lo, int hi) {
  for (;;) {
    const auto exponent = static_cast<std::uint16_t>(std::uniform_int_distribution<>(lo, hi)(rng));
    const auto mantissa = static_cast<std::uint16_t>(rng() & 0x3FF);
    const auto sign = static_cast<std::uint16_t>(rng() & 0x8000);
    if (exponent == 0 && mantissa == 0) continue;
    return bits(static_cast<std::uint16_t>(sign | exponent << 10 | mantissa));
  }
}

// Whether `result` is the sum of values[0..n) under some order of pairwise combines: some binary
// tree over the values, each inner node rounding through half_add. n <= 4 (at most 15 trees).
constexpr int kMaxOrderRanks = 4;
bool is_possible_sum(const Half* values, int n, std::uint16_t result) {
  struct Set {
    std::uint16_t bits[15];
    int size = 0;
  };
  Set sums[1 << kMaxOrderRanks];  // indexed by subset mask
  const unsigned full = (1u << n) - 1;
  for (unsigned mask = 1; mask <= full; ++mask) {
    Set& out = sums[mask];
    if ((mask & (mask - 1)) == 0) {
      out.bits[out.size++] = values[__builtin_ctz(mask)].bits;
      continue;
    }
    const unsigned low = mask & (~mask + 1);  // each split {A, B} once: A holds the lowest member
    for (unsigned a = (mask - 1) & mask; a != 0; a = (a - 1) & mask) {
      if ((a & low) == 0) continue;
      const Set &x = sums[a], &y = sums[mask ^ a];
      for (int i = 0; i < x.size; ++i) {
        for (int j = 0; j < y.size; ++j) {
          const std::uint16_t z = half_add(bits(x.bits[i]), bits(y.bits[j])).bits;
          if (std::find(out.bits, out.bits + out.size, z) == out.bits + out.size) {
            out.bits[out.size++] = z;
          }
        }
      }
    }
  }
  const Set& all = sums[full];
  return std::find(all.bits, all.bits + all.size, result) != all.bits + all.size;
}

class Fp16Test : public CommTest {};

// Rank r adds (r+1)/2 + (i%5 - 2): every partial sum in any order is a multiple of 1/2 below 16,
// so exact, and the total is n(n+1)/4 + n(i%5 - 2).
TEST_P(Fp16Test, SumIsExactAndChargedHalfTheFloat32Bytes) {
  const std::size_t count = GetParam();
  for (bool async : {false, true}) {
    SCOPED_TRACE(async ? "async" : "blocking");
    comm_->reset();
    std::vector<Half> buf(count);
    for (std::size_t i = 0; i < count; ++i) {
      buf[i] = to_half(0.5f * static_cast<float>(r_ + 1) + static_cast<float>(i % 5) - 2.0f);
    }
    allreduce_half(*comm_, buf, ReduceOp::kSum, async);
    for (std::size_t i = 0; i < count; ++i) {
      const float expected = static_cast<float>(n_ * (n_ + 1)) / 4.0f +
                             static_cast<float>(n_) * (static_cast<float>(i % 5) - 2.0f);
      ASSERT_EQ(buf[i].bits, to_half(expected).bits) << "at " << i << ": " << to_float(buf[i]);
    }
    const auto c = comm_->counters()[TrafficKind::kGradient];
    EXPECT_EQ(c.sent_bytes, expected_allreduce_bytes(count, 2, r_, n_));
    EXPECT_EQ(c.received_bytes, expected_allreduce_bytes(count, 2, r_, n_));
    EXPECT_EQ(c.calls, 1u);
  }
}

// Rank r holds ((r + i) % n)/4 - 1 + 8(i%7): the largest is (n-1)/4 - 1 + 8(i%7), the smallest
// -1 + 8(i%7).
TEST_P(Fp16Test, MaxAndMinAreExact) {
  const std::size_t count = GetParam();
  for (bool async : {false, true}) {
    SCOPED_TRACE(async ? "async" : "blocking");
    std::vector<Half> hi(count), lo(count);
    for (std::size_t i = 0; i < count; ++i) {
      const auto spread = static_cast<float>((static_cast<std::size_t>(r_) + i) % n_);
      hi[i] = lo[i] = to_half(0.25f * spread - 1.0f + 8.0f * static_cast<float>(i % 7));
    }
    allreduce_half(*comm_, hi, ReduceOp::kMax, async);
    allreduce_half(*comm_, lo, ReduceOp::kMin, async);
    for (std::size_t i = 0; i < count; ++i) {
      const float base = -1.0f + 8.0f * static_cast<float>(i % 7);
      ASSERT_EQ(hi[i].bits, to_half(base + 0.25f * static_cast<float>(n_ - 1)).bits) << "at " << i;
      ASSERT_EQ(lo[i].bits, to_half(base).bits) << "at " << i;
    }
  }
}

// Only ranks 0 and 1 contribute (the others add +0, which leaves any non-zero value and +0 as
// they are), so whatever order MPI combines in, element i is round_half(float(a0) + float(a1)).
// The values span every finite binary16 magnitude, subnormals included, so sums round, underflow
// to zero and overflow to infinity.
TEST_P(Fp16Test, TwoRankSumsRoundLikeFloatThenHalf) {
  const std::size_t count = GetParam();
  std::mt19937 rng(1234);
  std::vector<Half> a0(count), a1(count);
  for (std::size_t i = 0; i < count; ++i) {
    a0[i] = random_half(rng, 0, 30);
    // Half the time a neighbour of a0's magnitude, so that cancellation and ties occur too.
    a1[i] =
        (i % 2 == 0)
            ? random_half(rng, 0, 30)
            : bits(static_cast<std::uint16_t>((a0[i].bits ^ (rng() & 0x8000)) + (rng() % 3) - 1));
    if ((a1[i].bits & 0x7C00) == 0x7C00 || (a1[i].bits & 0x7FFF) == 0) a1[i] = to_half(1.0f);
  }
  for (bool async : {false, true}) {
    SCOPED_TRACE(async ? "async" : "blocking");
    std::vector<Half> buf(count, to_half(0.0f));
    if (r_ == 0) buf = a0;
    if (r_ == 1) buf = a1;
    allreduce_half(*comm_, buf, ReduceOp::kSum, async);
    std::size_t rounded = 0, infinite = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const Half expected = half_add(a0[i], a1[i]);
      ASSERT_EQ(buf[i].bits, expected.bits)
          << "at " << i << ": " << to_float(a0[i]) << " + " << to_float(a1[i]);
      const double exact = static_cast<double>(to_float(a0[i])) + to_float(a1[i]);
      if (static_cast<double>(to_float(expected)) != exact) ++rounded;
      if ((expected.bits & 0x7FFF) == 0x7C00) ++infinite;
    }
    if (count >= 1000) {  // the test exercised what it claims to
      EXPECT_GT(rounded, count / 10);
      EXPECT_GT(infinite, 0u);
    }
  }
}

// Every rank contributes random halves of moderate size (no overflow, most sums inexact): each
// result must be one that some order of pairwise combines gives, and every rank must hold the
// same bits.
TEST_P(Fp16Test, RandomSumsArePossibleOrdersAndBitIdenticalOnEveryRank) {
  const std::size_t count = GetParam();
  // Every rank draws every rank's values, so each can compute the possible results.
  std::vector<std::vector<Half>> inputs(static_cast<std::size_t>(n_), std::vector<Half>(count));
  for (int r = 0; r < n_; ++r) {
    std::mt19937 rng(static_cast<unsigned>(100 + r));
    for (auto& h : inputs[static_cast<std::size_t>(r)]) h = random_half(rng, 5, 20);
  }
  for (bool async : {false, true}) {
    SCOPED_TRACE(async ? "async" : "blocking");
    std::vector<Half> buf = inputs[static_cast<std::size_t>(r_)];
    allreduce_half(*comm_, buf, ReduceOp::kSum, async);
    std::size_t rounded = 0;
    // Past 100003 elements, every 7th element's order is checked (the checks are slow; the stride
    // still reaches every part of the buffer that MPI may reduce separately).
    const std::size_t order_stride = count > 100003 ? 7 : 1;
    std::vector<Half> column(static_cast<std::size_t>(n_));
    for (std::size_t i = 0; i < count; ++i) {
      double exact = 0;
      for (int r = 0; r < n_; ++r) {
        column[static_cast<std::size_t>(r)] = inputs[static_cast<std::size_t>(r)][i];
        exact += to_float(column[static_cast<std::size_t>(r)]);
      }
      if (n_ <= kMaxOrderRanks && i % order_stride == 0) {
        ASSERT_TRUE(is_possible_sum(column.data(), n_, buf[i].bits))
            << "at " << i << ": " << to_float(buf[i]) << " is no order's sum";
      }
      if (static_cast<double>(to_float(buf[i])) != exact) ++rounded;
    }
    if (count >= 1000) EXPECT_GT(rounded, count / 2);

    const std::vector<Half> all = gather_all(*comm_, buf);
    for (int r = 0; r < n_; ++r) {
      for (std::size_t i = 0; i < count; ++i) {
        ASSERT_EQ(all[static_cast<std::size_t>(r) * count + i].bits, buf[i].bits)
            << "rank " << r << " differs from rank " << r_ << " at " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Counts, Fp16Test, ::testing::Values(0, 1, 7, 1000, 1025, 100003, 1000003),
                         [](const auto& info) { return "n" + std::to_string(info.param); });

// Overflow, infinities, NaN and signed zeros, for each op, blocking and async. Each row gives
// rank 0's, rank 1's and every other rank's value, and the expected bits per op (or kUnchecked
// where the result depends on the number of ranks).
TEST(CommFp16, OverflowInfinityNaNAndSignedZeros) {
  CountingCommunicator comm(make_mpi_world_communicator());
  const int r = comm.rank(), n = comm.size();
  constexpr std::uint32_t kUnchecked = 0x10000;
  struct Row {
    std::uint16_t rank0, rank1, others;
    std::uint32_t sum, max, min;
  };
  const std::uint16_t inf = 0x7C00, ninf = 0xFC00, one = 0x3C00, pzero = 0, nzero = 0x8000;
  const std::uint16_t h60000 = to_half(60000.0f).bits, n60000 = to_half(-60000.0f).bits;
  const std::uint16_t h32768 = to_half(32768.0f).bits, max_half = 0x7BFF;  // 65504
  const std::vector<Row> rows = {
      {h60000, h60000, h60000, inf, h60000, h60000},  // 120000+ overflows
      {n60000, n60000, n60000, ninf, n60000, n60000},
      // 32768 + 32752 = 65520, the midpoint to 65536: ties to even round to inf.
      {h32768, to_half(32752.0f).bits, pzero, inf, kUnchecked, kUnchecked},
      // 32768 + 32736 = 65504, the largest finite half.
      {h32768, to_half(32736.0f).bits, pzero, max_half, kUnchecked, kUnchecked},
      {max_half, max_half, max_half, inf, max_half, max_half},
      {inf, ninf, one, kCanonicalNaN, inf, ninf},  // inf + -inf is NaN in any order
      // A signalling NaN with a payload on rank 1 becomes the canonical quiet NaN.
      {one, 0xFD01, one, kCanonicalNaN, kCanonicalNaN, kCanonicalNaN},
      {pzero, 0x7E55, ninf, kCanonicalNaN, kCanonicalNaN, kCanonicalNaN},
      {nzero, pzero, pzero, pzero, pzero, nzero},  // -0 + +0 is +0; +0 above -0
      {pzero, nzero, nzero, pzero, pzero, nzero},
      {nzero, nzero, nzero, nzero, nzero, nzero},
  };
  for (bool async : {false, true}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin}) {
      SCOPED_TRACE(std::string(async ? "async " : "blocking ") +
                   std::to_string(static_cast<int>(op)));
      std::vector<Half> buf(rows.size());
      for (std::size_t i = 0; i < rows.size(); ++i) {
        buf[i] = bits(r == 0 ? rows[i].rank0 : r == 1 ? rows[i].rank1 : rows[i].others);
      }
      allreduce_half(comm, buf, op, async);
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const std::uint32_t expected = op == ReduceOp::kSum   ? rows[i].sum
                                       : op == ReduceOp::kMax ? rows[i].max
                                                              : rows[i].min;
        if (expected == kUnchecked) continue;
        EXPECT_EQ(buf[i].bits, expected) << "row " << i << " at " << n << " ranks";
      }
    }
  }
}

TEST(Comm, AsyncOperationsCompleteIndependently) {
  CountingCommunicator comm(make_mpi_world_communicator());
  const int n = comm.size();
  std::vector<float> a(4096, 1.0f);
  std::vector<std::int64_t> b(3, comm.rank());
  WorkHandle wa = comm.allreduce_async(a.data(), a.size(), DataType::kFloat32, ReduceOp::kSum,
                                       TrafficKind::kGradient);
  WorkHandle wb = comm.allreduce_async(b.data(), b.size(), DataType::kInt64, ReduceOp::kMax,
                                       TrafficKind::kControl);
  wb->wait();
  wa->wait();
  wa->wait();  // a second wait returns at once
  for (float v : a) ASSERT_EQ(v, static_cast<float>(n));
  for (auto v : b) ASSERT_EQ(v, n - 1);
  std::int64_t lowest = comm.rank() + 10;
  comm.allreduce(&lowest, 1, DataType::kInt64, ReduceOp::kMin, TrafficKind::kControl);
  EXPECT_EQ(lowest, 10);
}

// The async forms go through MPI's non-blocking collectives, a different path from the blocking
// forms above: the same results and the same counts.
TEST(Comm, AsyncAllgathervAndBroadcastMatchTheBlockingForms) {
  CountingCommunicator comm(make_mpi_world_communicator());
  const int n = comm.size(), r = comm.rank();
  std::vector<std::size_t> counts(n);
  for (int i = 0; i < n; ++i) counts[i] = static_cast<std::size_t>(2 * i + 1);
  std::vector<float> send(counts[r], static_cast<float>(r));
  std::vector<float> recv(static_cast<std::size_t>(n) * n, -1.0f);  // sum of 2i+1 is n^2
  std::vector<std::int64_t> bcast(5, r == 1 % n ? 77 : 0);
  WorkHandle g = comm.allgatherv_async(send.data(), send.size(), recv.data(), counts,
                                       DataType::kFloat32, TrafficKind::kParameter);
  WorkHandle b = comm.broadcast_async(bcast.data(), bcast.size(), DataType::kInt64, 1 % n,
                                      TrafficKind::kControl);
  g->wait();
  b->wait();
  std::size_t at = 0;
  for (int i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < counts[i]; ++j) ASSERT_EQ(recv[at++], static_cast<float>(i));
  }
  for (auto v : bcast) EXPECT_EQ(v, 77);
  const auto c = comm.counters();
  EXPECT_EQ(c[TrafficKind::kParameter].sent_bytes,
            static_cast<std::uint64_t>(n - 1) * counts[r] * 4);
  EXPECT_EQ(c[TrafficKind::kParameter].received_bytes,
            (static_cast<std::uint64_t>(n) * n - counts[r]) * 4);
  EXPECT_EQ(c[TrafficKind::kControl].received_bytes, r == 1 % n ? 0u : 40u);
}

TEST(Comm, BadArgumentsAreErrorsBeforeAnythingIsSent) {
  CountingCommunicator comm(make_mpi_world_communicator());
  float x = 0;
  EXPECT_THROW(comm.broadcast(&x, 1, DataType::kFloat32, comm.size(), TrafficKind::kControl),
               CommError);
  EXPECT_THROW(comm.allgatherv(&x, 1, &x, std::vector<std::size_t>(comm.size() + 1, 1),
                               DataType::kFloat32, TrafficKind::kControl),
               CommError);
  std::vector<float> out(comm.size() * 2);
  EXPECT_THROW(comm.allgatherv(&x, 1, out.data(), std::vector<std::size_t>(comm.size(), 2),
                               DataType::kFloat32, TrafficKind::kControl),
               CommError);
  const std::size_t too_many = static_cast<std::size_t>(INT_MAX) + 1;  // never read
  EXPECT_THROW(
      comm.allreduce(&x, too_many, DataType::kFloat16, ReduceOp::kSum, TrafficKind::kGradient),
      CommError);
  EXPECT_THROW(comm.broadcast_async(&x, 1, DataType::kFloat32, -1, TrafficKind::kControl),
               CommError);
  EXPECT_THROW(comm.allgatherv_async(&x, 1, &x, {}, DataType::kFloat32, TrafficKind::kControl),
               CommError);
  EXPECT_THROW(comm.allreduce_async(&x, too_many, DataType::kFloat16, ReduceOp::kMax,
                                    TrafficKind::kGradient),
               CommError);
  const auto n = static_cast<std::size_t>(comm.size());
  const std::string here = "alltoallv on rank " + std::to_string(comm.rank()) + ": ";
  try {
    comm.alltoallv(&x, std::vector<std::size_t>(n + 1, 0), &x, std::vector<std::size_t>(n, 0),
                   DataType::kFloat32, TrafficKind::kControl);
    ADD_FAILURE() << "n + 1 send counts were accepted";
  } catch (const CommError& e) {
    EXPECT_EQ(std::string(e.what()),
              here + std::to_string(n + 1) + " send counts for " + std::to_string(n) + " ranks");
  }
  try {
    comm.alltoallv_async(&x, std::vector<std::size_t>(n, 0), &x, std::vector<std::size_t>(n - 1, 0),
                         DataType::kFloat32, TrafficKind::kControl);
    ADD_FAILURE() << "n - 1 receive counts were accepted";
  } catch (const CommError& e) {
    EXPECT_EQ(std::string(e.what()),
              here + std::to_string(n - 1) + " receive counts for " + std::to_string(n) + " ranks");
  }
  std::vector<std::size_t> send_counts(n, 0), recv_counts(n, 0);
  send_counts[static_cast<std::size_t>(comm.rank())] = 1;  // this rank's block for itself differs
  recv_counts[static_cast<std::size_t>(comm.rank())] = 2;
  EXPECT_THROW(comm.alltoallv(out.data(), send_counts, out.data() + 1, recv_counts,
                              DataType::kFloat32, TrafficKind::kControl),
               CommError);
  send_counts[static_cast<std::size_t>(comm.rank())] = too_many;
  recv_counts[static_cast<std::size_t>(comm.rank())] = too_many;
  EXPECT_THROW(comm.alltoallv_async(&x, send_counts, &x, recv_counts, DataType::kFloat32,
                                    TrafficKind::kControl),
               CommError);
  // Nothing was sent, and the ranks are still in step.
  EXPECT_EQ(comm.counters().total_sent(), 0u);
  comm.barrier();
}

// GRADWIRE_MPI_WAIT (Note [Waiting for MPI]).

// The smallest and largest of `value` over the world.
std::pair<int, int> world_range(int value) {
  int lo = value, hi = value;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return {lo, hi};
}

TEST(MpiWait, AnExplicitModeIsKeptAndEveryCollectiveCompletesUnderIt) {
  for (const MpiWait wait : {MpiWait::kBlock, MpiWait::kYield}) {
    SCOPED_TRACE(to_string(wait));
    MpiCommunicator comm(MPI_COMM_WORLD, wait);
    const int n = comm.size(), r = comm.rank();
    EXPECT_EQ(comm.wait_mode(), wait);
    EXPECT_EQ(comm.wait_reason().rfind(std::string("GRADWIRE_MPI_WAIT=") + to_string(wait), 0), 0u)
        << comm.wait_reason();
    std::int32_t sum = r + 1;
    comm.allreduce(&sum, 1, DataType::kInt32, ReduceOp::kSum, TrafficKind::kControl);
    EXPECT_EQ(sum, n * (n + 1) / 2);
    std::int32_t nothing = 0;
    comm.allreduce(&nothing, 0, DataType::kInt32, ReduceOp::kSum, TrafficKind::kControl);
    std::vector<std::int32_t> all(n, -1);
    const std::int32_t mine = 10 * r;
    comm.allgatherv(&mine, 1, all.data(), std::vector<std::size_t>(n, 1), DataType::kInt32,
                    TrafficKind::kControl);
    for (int q = 0; q < n; ++q) EXPECT_EQ(all[q], 10 * q);
    std::vector<std::int32_t> to_each(n), from(n, -1);
    for (int q = 0; q < n; ++q) to_each[q] = 10 * r + q;
    comm.alltoallv(to_each.data(), std::vector<std::size_t>(n, 1), from.data(),
                   std::vector<std::size_t>(n, 1), DataType::kInt32, TrafficKind::kControl);
    for (int q = 0; q < n; ++q) EXPECT_EQ(from[q], 10 * q + r);
    std::int32_t root_value = r == n - 1 ? 77 : 0;
    comm.broadcast(&root_value, 1, DataType::kInt32, n - 1, TrafficKind::kControl);
    EXPECT_EQ(root_value, 77);
    std::int32_t async_sum = 1;
    comm.allreduce_async(&async_sum, 1, DataType::kInt32, ReduceOp::kSum, TrafficKind::kControl)
        ->wait();
    EXPECT_EQ(async_sum, n);
    comm.barrier();
  }
}

TEST(MpiWait, AutoIsSettledAlikeOnEveryRankFromTheMpiAndTheCores) {
  MpiCommunicator comm(MPI_COMM_WORLD, MpiWait::kAuto);
  ASSERT_NE(comm.wait_mode(), MpiWait::kAuto);
  const auto [lo, hi] = world_range(static_cast<int>(comm.wait_mode()));
  EXPECT_EQ(lo, hi) << "ranks settled auto differently";
  EXPECT_EQ(comm.wait_reason().rfind("auto: ", 0), 0u) << comm.wait_reason();
#ifdef OPEN_MPI
  // Open MPI yields by itself where its launcher sees more ranks than slots.
  EXPECT_EQ(comm.wait_mode(), MpiWait::kBlock) << comm.wait_reason();
#else
  // The tests run on one node, unbound: yield exactly when the ranks outnumber this rank's CPUs.
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  ASSERT_EQ(sched_getaffinity(0, sizeof cpus, &cpus), 0);
  const bool more_ranks_than_cpus = comm.size() > CPU_COUNT(&cpus);
  EXPECT_EQ(comm.wait_mode(), more_ranks_than_cpus ? MpiWait::kYield : MpiWait::kBlock)
      << comm.wait_reason();
#endif
}

TEST(MpiWait, RanksAskingForDifferentModesAllGetTheSameErrorAndNoHang) {
  int n = 0, r = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  if (n < 2) GTEST_SKIP() << "needs 2 ranks";
  try {
    MpiCommunicator comm(MPI_COMM_WORLD, r == 0 ? MpiWait::kBlock : MpiWait::kYield);
    ADD_FAILURE() << "ranks waiting differently were accepted";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "GRADWIRE_MPI_WAIT differs across ranks (both 'block' and 'yield' were asked "
                  "for; this rank asked for '" +
                  std::string(r == 0 ? "block" : "yield") + "')"),
              std::string::npos)
        << e.what();
  }
  // The refused communicator left nothing behind: the ranks are still in step.
  MpiCommunicator after(MPI_COMM_WORLD, MpiWait::kYield);
  std::int32_t one = 1;
  after.allreduce(&one, 1, DataType::kInt32, ReduceOp::kSum, TrafficKind::kControl);
  EXPECT_EQ(one, after.size());
}

TEST(MpiInfo, NamesTheLibraryInOnePrintableLineAndHowTheRanksWait) {
  const std::unique_ptr<Communicator> world = make_mpi_world_communicator();
  const MpiInfo info = mpi_info(*world);
  ASSERT_FALSE(info.library.empty());
  for (const char c : info.library) {
    EXPECT_TRUE(std::isprint(static_cast<unsigned char>(c)))
        << "character " << static_cast<int>(c) << " in '" << info.library << "'";
  }
  EXPECT_NE(info.library.front(), ' ');
  EXPECT_NE(info.library.back(), ' ');
  EXPECT_EQ(info.library.find("  "), std::string::npos) << info.library;
#ifdef OPEN_MPI
  EXPECT_EQ(info.library.rfind("Open MPI", 0), 0u) << info.library;
#elif defined(MPICH)
  EXPECT_NE(info.library.find("MPICH"), std::string::npos) << info.library;
#endif
  const Communicator* flat = world.get();  // under the stager where CUDA is usable
  if (const auto* staged = dynamic_cast<const StagingCommunicator*>(flat)) flat = &staged->inner();
  const auto& mpi = dynamic_cast<const MpiCommunicator&>(*flat);
  EXPECT_EQ(info.wait, to_string(mpi.wait_mode()));
  EXPECT_EQ(info.wait_reason, mpi.wait_reason());
  // Only a communicator from make_mpi_world_communicator has these facts; the library's name is
  // there for any (the trainer's report under NCCL).
  const CountingCommunicator counting(make_mpi_world_communicator());
  EXPECT_THROW(mpi_info(counting), std::invalid_argument);
  EXPECT_EQ(mpi_library_version(), info.library);
}

TEST(MpiWait, ParsesTheRegistryChoicesOnly) {
  EXPECT_EQ(parse_mpi_wait("auto"), MpiWait::kAuto);
  EXPECT_EQ(parse_mpi_wait("block"), MpiWait::kBlock);
  EXPECT_EQ(parse_mpi_wait("yield"), MpiWait::kYield);
  EXPECT_THROW(parse_mpi_wait("spin"), std::invalid_argument);
}

}  // namespace
}  // namespace gw
