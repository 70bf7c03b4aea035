// Note [Collectives ordered on a stream]: where the communicator orders its collectives on the
// compressor's stream, BucketExchange::run makes no host synchronisation for a dense bucket (none,
// fp16, powersgd's two rounds) and tells every dense collective the stream its inputs are ready
// on; elsewhere it synchronises as before. Counted with Stream::synchronize_calls on the host
// stream, so this runs on any machine (the DDP hook's GPU path is the one that orders: its
// results there are tests/python/ddp_hook_cuda_test.py's). One rank, no MPI.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "plugin/comm/counting_communicator.h"
#include "plugin/compressor_factory.h"
#include "plugin/config/config.h"
#include "plugin/config/params.h"
#include "plugin/exchange/bucket_exchange.h"

namespace gw {
namespace {

// One rank: a sum over ranks is the buffer itself; what a gather receives is what was sent. It
// records where each collective said its inputs were ready, and orders on the host stream when
// told to.
class OneRank final : public Communicator {
 public:
  explicit OneRank(bool ordered) : ordered_(ordered) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  bool orders_on(const kernels::Stream& stream) const override {
    return ordered_ && stream.is_host();
  }
  WorkHandle start(const Collective& c) override {
    ready_on.push_back(c.ready_on);
    if (!c.in_place()) {
      std::size_t n = c.count;
      if (c.op == CollectiveOp::kAlltoallv) n = c.send_counts.empty() ? 0 : c.send_counts[0];
      if (n > 0) std::memcpy(c.recv, c.send, n * size_of(c.type));
    }
    return completed_work();
  }
  void barrier() override {}

  std::vector<const kernels::Stream*> ready_on;

 private:
  bool ordered_;
};

struct Outcome {
  std::vector<float> buckets;  // every step's result, one after another
  std::uint64_t synchronizations = 0;
  std::vector<const kernels::Stream*> ready_on;
};

// Three steps of one bucket (a 64 x 32 matrix and a vector) under `compressor`.
Outcome run(const char* compressor, bool ordered) {
  config::Config c;
  c.set(config::keys::kCompressor, compressor);
  c.set(config::keys::kPowerSgdStartStep, "1");
  const std::vector<std::size_t> numels = {64 * 32, 32}, rows = {64, 0};
  auto codec = make_trial_compressor(read_compressor_settings(c), numels, rows, SgdMomentum{0.9});
  CountingCommunicator comm(std::make_unique<OneRank>(ordered));
  BucketExchange exchange;
  std::vector<float> data(numels[0] + numels[1]);
  compressors::BucketView view;
  view.tensors = {{0, 0, numels[0]}, {1, numels[0], numels[1]}};
  view.numel = data.size();
  view.data = data.data();
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  Outcome out;
  const std::uint64_t before = kernels::Stream::synchronize_calls();
  for (int step = 0; step < 3; ++step) {
    codec->begin_step(step);
    for (float& x : data) x = normal(rng);
    exchange.run(comm, *codec, view);
    out.buckets.insert(out.buckets.end(), data.begin(), data.end());
  }
  out.synchronizations = kernels::Stream::synchronize_calls() - before;
  out.ready_on = static_cast<OneRank&>(comm.inner()).ready_on;
  return out;
}

class OrderedExchange : public ::testing::TestWithParam<const char*> {};

TEST_P(OrderedExchange, ADenseBucketWaitsForNothingWhereTheCommunicatorOrders) {
  const Outcome waits = run(GetParam(), false);
  const Outcome ordered = run(GetParam(), true);
  EXPECT_GT(waits.synchronizations, 0u);
  EXPECT_EQ(ordered.synchronizations, 0u);
  ASSERT_FALSE(ordered.ready_on.empty());
  for (const kernels::Stream* s : waits.ready_on) EXPECT_EQ(s, nullptr);
  for (const kernels::Stream* s : ordered.ready_on) EXPECT_NE(s, nullptr);
  // The same arithmetic either way.
  ASSERT_EQ(waits.buckets.size(), ordered.buckets.size());
  EXPECT_EQ(std::memcmp(waits.buckets.data(), ordered.buckets.data(),
                        waits.buckets.size() * sizeof(float)),
            0);
}

INSTANTIATE_TEST_SUITE_P(Dense, OrderedExchange, ::testing::Values("none", "fp16", "powersgd"));

TEST(OrderedExchange, CountingPassesTheOrderOn) {
  const kernels::Stream host = kernels::Stream::host();
  EXPECT_TRUE(CountingCommunicator(std::make_unique<OneRank>(true)).orders_on(host));
  EXPECT_FALSE(CountingCommunicator(std::make_unique<OneRank>(false)).orders_on(host));
}

}  // namespace
}  // namespace gw
