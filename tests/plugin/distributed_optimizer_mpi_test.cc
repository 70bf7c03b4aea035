// DistributedOptimizer under a real mpirun: broadcast of rank 0's parameters, averaged gradients
// reaching the inner optimizer, traffic counters, and configuration or layout mismatches that are
// errors on every rank instead of hangs.
#include <gtest/gtest.h>

#include <chrono>
#include <istream>
#include <ostream>
#include <sstream>

#include "plugin/comm/mpi/mpi_runtime.h"
#include "plugin/config/params.h"
#include "plugin/config_check.h"
#include "plugin/distributed_optimizer.h"

namespace gw {
namespace {

// w -= grad, and remembers the gradients it was given.
class RecordingOptimizer : public Optimizer {
 public:
  std::string name() const override { return "recording"; }
  void step(const std::vector<ParameterView>& params) override {
    seen.clear();
    scales.clear();
    for (const auto& p : params) {
      seen.emplace_back(p.grad, p.grad + p.numel);
      scales.push_back(p.grad_scale);
      for (std::size_t i = 0; i < p.numel; ++i) p.value[i] -= p.grad[i] * p.grad_scale;
    }
  }
  bool accepts_gradient_scale() const override { return accepts_scale; }
  double learning_rate() const override { return 1.0; }
  void set_learning_rate(double) override {}
  void save_state(std::ostream&) const override {}
  void load_state(std::istream&) override {}
  std::vector<std::vector<float>> seen;
  std::vector<float> scales;
  bool accepts_scale = false;
};

struct Fixture {
  std::shared_ptr<CountingCommunicator> comm =
      std::make_shared<CountingCommunicator>(make_mpi_world_communicator());
  std::vector<float> w = std::vector<float>(5);
  std::vector<float> b = std::vector<float>(3);
  RecordingOptimizer* inner = nullptr;

  Fixture() {
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = 100.0f * comm->rank() + i;
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = -100.0f * comm->rank() - i;
  }
  DistributedOptimizer make(DistributedOptimizerOptions options = {}, bool accepts_scale = false) {
    options.read_environment = false;
    auto rec = std::make_unique<RecordingOptimizer>();
    rec->accepts_scale = accepts_scale;
    inner = rec.get();
    return DistributedOptimizer(comm, std::move(rec),
                                {{"w", w.data(), w.size()}, {"b", b.data(), b.size()}},
                                std::move(options));
  }
};

// Throws from a constructor whose argument must be moved; a helper keeps the tests readable.
std::string construction_error(Fixture& f, DistributedOptimizerOptions options) {
  try {
    f.make(std::move(options));
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(DistributedOptimizer, BroadcastsRankZerosParameters) {
  Fixture f;
  DistributedOptimizer opt = f.make();
  for (std::size_t i = 0; i < f.w.size(); ++i) EXPECT_EQ(f.w[i], static_cast<float>(i));
  for (std::size_t i = 0; i < f.b.size(); ++i) EXPECT_EQ(f.b[i], -static_cast<float>(i));
  const auto c = f.comm->counters()[TrafficKind::kParameter];
  const std::uint64_t bytes = 8 * 4;
  EXPECT_EQ(c.sent_bytes, f.comm->rank() == 0 ? bytes * (f.comm->size() - 1) : 0u);
  EXPECT_EQ(c.received_bytes, f.comm->rank() == 0 ? 0u : bytes);
}

TEST(DistributedOptimizer, InnerOptimizerSeesTheAverageOfTheRanksGradients) {
  Fixture f;
  DistributedOptimizer opt = f.make();
  const int n = f.comm->size(), r = f.comm->rank();
  const auto control_before = f.comm->counters()[TrafficKind::kControl].sent_bytes;
  for (int step = 0; step < 3; ++step) {
    // Rank r's gradient is r + 1 + step + i: the average is (n + 1) / 2 + step + i, exact in fp32.
    for (std::size_t p = 0; p < 2; ++p) {
      float* g = opt.gradient(p);
      const std::size_t numel = p == 0 ? 5 : 3;
      for (std::size_t i = 0; i < numel; ++i) g[i] = static_cast<float>(r + 1 + step + i);
    }
    opt.gradient_ready(1);  // backward order: last parameter first
    opt.gradient_ready(0);
    opt.step();
    ASSERT_EQ(f.inner->seen.size(), 2u);
    EXPECT_EQ(f.inner->scales, std::vector<float>(2, 1.0f));
    for (std::size_t i = 0; i < 5; ++i) {
      EXPECT_EQ(f.inner->seen[0][i], (n + 1) / 2.0f + step + i) << "step " << step << " i " << i;
    }
  }
  EXPECT_EQ(opt.steps(), 3);
  // Parameters stay identical across ranks: each started at rank 0's and took the same steps.
  std::vector<float> w_max = f.w;
  f.comm->allreduce(w_max.data(), w_max.size(), DataType::kFloat32, ReduceOp::kMax,
                    TrafficKind::kControl);
  EXPECT_EQ(w_max, f.w);

  const auto c = f.comm->counters();
  EXPECT_EQ(c[TrafficKind::kGradient].calls, 3u);
  EXPECT_EQ(c[TrafficKind::kGradient].sent_bytes,
            3 * CountingCommunicator::allreduce_bytes(8, 4, r, n));
  // The configuration check at construction is control traffic.
  if (n > 1) EXPECT_GT(control_before, 0u);
}

TEST(DistributedOptimizer, AScaleAcceptingOptimizerGetsTheSumAndOneOverN) {
  Fixture f;
  DistributedOptimizer opt = f.make({}, /*accepts_scale=*/true);
  const int n = f.comm->size();
  for (std::size_t p = 0; p < 2; ++p) {
    float* g = opt.gradient(p);
    for (std::size_t i = 0; i < (p == 0 ? 5u : 3u); ++i)
      g[i] = static_cast<float>(f.comm->rank() + 1);
  }
  opt.step();
  // No pass over the gradients: the sum is left in place, the optimizer applies 1/n.
  EXPECT_EQ(f.inner->seen[0][0], n * (n + 1) / 2.0f);
  EXPECT_EQ(f.inner->scales, std::vector<float>(2, 1.0f / n));
  EXPECT_EQ(f.w[0], 0.0f - (n + 1) / 2.0f);
  // synchronize_gradients() still leaves the average in the buffer, whatever the optimizer.
  for (std::size_t i = 0; i < 5; ++i) opt.gradient(0)[i] = static_cast<float>(f.comm->rank() + 1);
  opt.synchronize_gradients();
  EXPECT_EQ(opt.gradient(0)[0], (n + 1) / 2.0f);
  // The next step() uses those averages as they are, without a second exchange.
  const auto calls = f.comm->counters()[TrafficKind::kGradient].calls;
  opt.step();
  EXPECT_EQ(f.comm->counters()[TrafficKind::kGradient].calls, calls);
  EXPECT_EQ(f.inner->seen[0][0], (n + 1) / 2.0f);
  EXPECT_EQ(f.inner->scales, std::vector<float>(2, 1.0f));
}

// The exchange's span for the trainer's report (the host clock here): positive once a step has
// exchanged, and inside the time the step took from its first gradient_ready.
TEST(DistributedOptimizer, LastExchangeSpansTheStepsExchanges) {
  Fixture f;
  DistributedOptimizer opt = f.make();
  EXPECT_EQ(opt.last_exchange_ms(), 0.0);
  for (int step = 0; step < 3; ++step) {
    const auto begin = std::chrono::steady_clock::now();
    opt.gradient_ready(1);
    opt.gradient_ready(0);
    opt.step();
    const double wall_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
    EXPECT_GT(opt.last_exchange_ms(), 0.0);
    EXPECT_LE(opt.last_exchange_ms(), wall_ms);
  }
}

TEST(DistributedOptimizer, SumReductionLeavesTheSum) {
  Fixture f;
  DistributedOptimizerOptions options;
  options.config.set(config::keys::kGradientReduction, "sum");
  DistributedOptimizer opt = f.make(std::move(options));
  const int n = f.comm->size();
  for (std::size_t p = 0; p < 2; ++p) {
    float* g = opt.gradient(p);
    for (std::size_t i = 0; i < (p == 0 ? 5u : 3u); ++i) g[i] = static_cast<float>(f.comm->rank());
  }
  opt.step();
  EXPECT_EQ(f.inner->seen[1][2], n * (n - 1) / 2.0f);
}

TEST(DistributedOptimizer, MisusedGradientReadyIsALogicError) {
  Fixture f;
  DistributedOptimizer opt = f.make();
  opt.gradient_ready(0);
  EXPECT_THROW(opt.gradient_ready(0), std::logic_error);
  EXPECT_THROW(opt.gradient_ready(2), std::logic_error);
  // Calls that use the communicator on this thread wait for the step to end.
  EXPECT_THROW(opt.broadcast_parameters(), std::logic_error);
  std::stringstream state;
  EXPECT_THROW(opt.save_state(state), std::logic_error);
  try {
    opt.step();  // b was never reported ready
    ADD_FAILURE() << "step() accepted a partial set of ready gradients";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("not called for: b"), std::string::npos) << e.what();
  }
}

TEST(DistributedOptimizer, DifferentConfigurationsAreAnErrorOnEveryRank) {
  Fixture f;
  if (f.comm->size() < 2) GTEST_SKIP() << "needs 2 ranks";
  DistributedOptimizerOptions options;
  if (f.comm->rank() == 1) options.config.set(config::keys::kGradientReduction, "sum");
  const std::string msg = construction_error(f, std::move(options));
  EXPECT_NE(msg.find("configuration differs across ranks"), std::string::npos) << msg;
  EXPECT_NE(msg.find("GRADWIRE_GRADIENT_REDUCTION: rank 0 'average', rank 1 'sum'"),
            std::string::npos)
      << msg;
  EXPECT_EQ(msg.find("GRADWIRE_COMPRESSOR"), std::string::npos) << msg;
  // Rank-local parameters may differ.
  DistributedOptimizerOptions local;
  if (f.comm->rank() == 1) local.config.set(config::keys::kLogLevel, "debug");
  EXPECT_EQ(construction_error(f, std::move(local)), "");
}

TEST(DistributedOptimizer, DifferentParameterLayoutsAreAnErrorOnEveryRank) {
  Fixture f;
  if (f.comm->size() < 2) GTEST_SKIP() << "needs 2 ranks";
  if (f.comm->rank() == 1) f.w.resize(4);
  const std::string msg = construction_error(f, {});
  EXPECT_NE(msg.find("parameter[0]: rank 0 'w (5 elements)', rank 1 'w (4 elements)'"),
            std::string::npos)
      << msg;
}

// A rank-local start-up step (GRADWIRE_TIMELINE) that fails on rank 1 only: every rank throws,
// rank 1 with the real error, the others naming rank 1 (Note [Ending the job on an error]).
TEST(DistributedOptimizer, ATimelineOneRankCannotOpenIsAnErrorOnEveryRank) {
  Fixture f;
  if (f.comm->size() < 2) GTEST_SKIP() << "needs 2 ranks";
  DistributedOptimizerOptions options;
  if (f.comm->rank() == 1) options.config.set(config::keys::kTimeline, "/nonexistent-dir/t.json");
  try {
    f.make(std::move(options));
    ADD_FAILURE() << "rank " << f.comm->rank() << " went on";
  } catch (const config::ConfigError& e) {
    EXPECT_TRUE(e.thrown_on_every_rank());
    EXPECT_FALSE(e.same_on_every_rank());
    const std::string msg = e.what();
    if (f.comm->rank() == 1) {
      EXPECT_NE(msg.find("GRADWIRE_TIMELINE: cannot write '/nonexistent-dir/t.rank1.json'"),
                std::string::npos)
          << msg;
    } else {
      EXPECT_EQ(msg, "stopping: start-up failed on rank 1 (its error is printed there)");
    }
  }
}

TEST(AgreeOnStartupErrors, NamesEveryRankThatFailedAndPassesWhenNoneDid) {
  Fixture f;
  const int n = f.comm->size(), rank = f.comm->rank();
  EXPECT_NO_THROW(agree_on_startup_errors(*f.comm, [] {}));
  // Every odd rank fails with its own message.
  std::string expected_ranks;
  for (int r = 1; r < n; r += 2)
    expected_ranks += (expected_ranks.empty() ? "" : ", ") + std::to_string(r);
  if (n < 2) GTEST_SKIP() << "needs 2 ranks";
  try {
    agree_on_startup_errors(*f.comm, [rank] {
      if (rank % 2 == 1) throw std::runtime_error("cannot open x on rank " + std::to_string(rank));
    });
    ADD_FAILURE() << "rank " << rank << " went on";
  } catch (const config::ConfigError& e) {
    EXPECT_TRUE(e.thrown_on_every_rank());
    if (rank % 2 == 1) {
      EXPECT_EQ(std::string(e.what()), "cannot open x on rank " + std::to_string(rank));
    } else {
      EXPECT_EQ(std::string(e.what()), "stopping: start-up failed on rank " + expected_ranks +
                                           " (its error is printed there)");
    }
  }
}

TEST(DistributedOptimizer, BadRegistrationsAreRejectedLocally) {
  Fixture f;
  DistributedOptimizerOptions options;
  options.read_environment = false;
  EXPECT_THROW(DistributedOptimizer(f.comm, std::make_unique<RecordingOptimizer>(),
                                    {{"a", f.w.data(), 2}, {"a", f.b.data(), 1}}, options),
               std::invalid_argument);
  EXPECT_THROW(DistributedOptimizer(f.comm, std::make_unique<RecordingOptimizer>(),
                                    {{"a", nullptr, 2}}, options),
               std::invalid_argument);
  EXPECT_THROW(DistributedOptimizer(f.comm, nullptr, {{"a", f.w.data(), 2}}, options),
               std::invalid_argument);
}

}  // namespace
}  // namespace gw
