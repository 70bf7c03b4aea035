// SyncPolicy: which steps exchange gradients, after which steps parameters are averaged, the
// adaptive period rule (Note [Adaptive period]) and save/load.
#include "sync_policies/sync_policy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

namespace gw::sync_policies {
namespace {

SyncOptions local(std::int64_t k) {
  SyncOptions o;
  o.mode = SyncMode::kLocalSgd;
  o.period = k;
  return o;
}

SyncOptions post_local(std::int64_t begin, std::int64_t k) {
  SyncOptions o = local(k);
  o.mode = SyncMode::kPostLocalSgd;
  o.begin_step = begin;
  return o;
}

SyncOptions adaptive(std::int64_t k_0, std::int64_t k_max, std::int64_t begin = 0) {
  SyncOptions o;
  o.mode = SyncMode::kAdaptiveLocalSgd;
  o.initial_period = k_0;
  o.max_period = k_max;
  o.begin_step = begin;
  return o;
}

// Runs `steps` steps, recording the steps that exchange gradients and those after which the
// parameters are averaged (calling averaged() there, with the loss and lr of `figures`).
struct Trace {
  std::vector<std::int64_t> exchanged, averaged;
};
Trace run(SyncPolicy& p, std::int64_t steps, double loss = 1.0, double lr = 0.1) {
  Trace t;
  for (std::int64_t s = 0; s < steps; ++s) {
    if (p.exchanges_gradients(s)) t.exchanged.push_back(s);
    if (p.averages_after(s)) {
      t.averaged.push_back(s);
      p.averaged(s, loss, lr);
    }
  }
  return t;
}

TEST(SyncMode, NamesRoundTripAndUnknownNamesListTheAccepted) {
  for (SyncMode m : {SyncMode::kEveryStep, SyncMode::kLocalSgd, SyncMode::kPostLocalSgd,
                     SyncMode::kAdaptiveLocalSgd}) {
    EXPECT_EQ(parse_sync_mode(to_string(m)), m);
  }
  try {
    parse_sync_mode("localsgd");
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'localsgd'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("every_step, local_sgd, post_local_sgd, "
                                         "adaptive_local_sgd"),
              std::string::npos)
        << e.what();
  }
}

TEST(SyncPolicy, EveryStepExchangesGradientsAndNeverAverages) {
  SyncPolicy p(SyncOptions{});
  const Trace t = run(p, 20);
  EXPECT_EQ(t.exchanged.size(), 20u);
  EXPECT_TRUE(t.averaged.empty());
  EXPECT_EQ(p.period(), 1);
  EXPECT_EQ(p.next_average_step(), -1);
  EXPECT_FALSE(p.needs_loss());
}

TEST(SyncPolicy, LocalSgdAveragesEveryKStepsAndNeverExchangesGradients) {
  SyncPolicy p(local(3));
  const Trace t = run(p, 12);
  EXPECT_TRUE(t.exchanged.empty());
  EXPECT_EQ(t.averaged, (std::vector<std::int64_t>{2, 5, 8, 11}));
  SyncPolicy every(local(1));
  EXPECT_EQ(run(every, 4).averaged, (std::vector<std::int64_t>{0, 1, 2, 3}));
}

TEST(SyncPolicy, PostLocalSgdIsSynchronousUntilTheBeginStep) {
  SyncPolicy p(post_local(5, 4));
  const Trace t = run(p, 17);
  EXPECT_EQ(t.exchanged, (std::vector<std::int64_t>{0, 1, 2, 3, 4}));
  // Local from step 5: the first period is steps 5..8.
  EXPECT_EQ(t.averaged, (std::vector<std::int64_t>{8, 12, 16}));
}

TEST(SyncPolicy, RejectsOptionsThatMakeNoSense) {
  SyncOptions zero = local(0);
  EXPECT_THROW(SyncPolicy{zero}, std::invalid_argument);
  SyncOptions begin = local(4);
  begin.begin_step = 3;  // that is post_local_sgd
  EXPECT_THROW(SyncPolicy{begin}, std::invalid_argument);
  EXPECT_THROW(SyncPolicy{post_local(0, 4)}, std::invalid_argument);
  EXPECT_THROW(SyncPolicy{post_local(-1, 4)}, std::invalid_argument);
  EXPECT_THROW(SyncPolicy{adaptive(8, 4)}, std::invalid_argument);
  EXPECT_THROW(SyncPolicy{adaptive(0, 4)}, std::invalid_argument);
  EXPECT_NO_THROW(SyncPolicy{adaptive(4, 4)});
}

TEST(SyncPolicy, AveragedOutsideTheScheduleIsALogicError) {
  SyncPolicy p(local(4));
  EXPECT_THROW(p.averaged(2, 1.0, 0.1), std::logic_error);
  EXPECT_NO_THROW(p.averaged(3, 1.0, 0.1));
  EXPECT_EQ(p.next_average_step(), 7);
  SyncPolicy every(SyncOptions{});
  EXPECT_THROW(every.averaged(0, 1.0, 0.1), std::logic_error);
}

TEST(AdaptivePeriod, FollowsTheFormula) {
  // ceil(sqrt((lr_0 / lr_t) * (loss_t / loss_0)) * k_0), clamped to [1, k_max].
  EXPECT_EQ(adaptive_period(0.1, 0.1, 2.0, 2.0, 8, 16), 8);   // unchanged figures: k_0
  EXPECT_EQ(adaptive_period(0.1, 0.1, 2.0, 0.5, 8, 16), 4);   // sqrt(1/4) * 8
  EXPECT_EQ(adaptive_period(0.1, 0.1, 2.0, 1.0, 8, 16), 6);   // ceil(0.7071 * 8 = 5.66)
  EXPECT_EQ(adaptive_period(0.1, 0.01, 2.0, 0.5, 8, 16), 13);  // ceil(sqrt(2.5) * 8 = 12.65)
  EXPECT_EQ(adaptive_period(0.1, 0.01, 2.0, 0.5, 8, 10), 10);  // clamped to k_max
  EXPECT_EQ(adaptive_period(0.1, 0.1, 2.0, 0.0, 8, 16), 1);    // clamped to 1
  EXPECT_EQ(adaptive_period(0.1, 0.0, 2.0, 0.5, 8, 16), 16);   // lr 0: k_max
  EXPECT_EQ(adaptive_period(0.1, 1e-300, 2.0, 0.5, 8, 16), 16);  // beyond int64: k_max
}

TEST(AdaptivePeriod, RejectsFiguresItCannotUse) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_THROW(adaptive_period(0.1, 0.1, 2.0, nan, 8, 16), std::invalid_argument);
  EXPECT_THROW(adaptive_period(0.1, 0.1, 2.0, inf, 8, 16), std::invalid_argument);
  EXPECT_THROW(adaptive_period(0.1, 0.1, 0.0, 1.0, 8, 16), std::invalid_argument);
  EXPECT_THROW(adaptive_period(0.0, 0.1, 2.0, 1.0, 8, 16), std::invalid_argument);
  EXPECT_THROW(adaptive_period(0.1, -0.1, 2.0, 1.0, 8, 16), std::invalid_argument);
  EXPECT_THROW(adaptive_period(0.1, 0.1, 2.0, -1.0, 8, 16), std::invalid_argument);
  EXPECT_THROW(adaptive_period(0.1, 0.1, 2.0, 1.0, 17, 16), std::invalid_argument);
  try {
    adaptive_period(0.1, 0.1, 2.0, nan, 8, 16);
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("mean loss (loss_t) is nan"), std::string::npos)
        << e.what();
  }
}

// Feeds the policy one (loss, lr) pair per averaging point and returns the periods it chose.
std::vector<std::int64_t> periods(SyncPolicy& p, const std::vector<double>& losses,
                                  const std::vector<double>& lrs) {
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < losses.size(); ++i) {
    const std::int64_t at = p.next_average_step();
    for (std::int64_t s = at - p.period() + 1; s < at; ++s) EXPECT_FALSE(p.averages_after(s));
    EXPECT_TRUE(p.averages_after(at));
    EXPECT_FALSE(p.exchanges_gradients(at));
    const std::int64_t k = p.averaged(at, losses[i], lrs[i]);
    EXPECT_EQ(p.next_average_step(), at + k);
    EXPECT_GE(k, 1);
    EXPECT_LE(k, p.options().max_period);
    out.push_back(k);
  }
  return out;
}

TEST(SyncPolicy, AdaptiveShortensThePeriodAsTheLossFallsAtAConstantLearningRate) {
  // AdaComm's rule: near convergence, average more often. loss_0 = 2.0 (the first point).
  SyncPolicy p(adaptive(8, 16));
  EXPECT_TRUE(p.needs_loss());
  EXPECT_EQ(p.next_average_step(), 7);
  const std::vector<double> losses = {2.0, 1.5, 1.0, 0.5, 0.25, 0.05, 0.001};
  const std::vector<std::int64_t> k = periods(p, losses, std::vector<double>(losses.size(), 0.1));
  // ceil(sqrt(loss / 2) * 8): 8, 7 (6.93), 6 (5.66), 4, 3 (2.83), 2 (1.26), 1 (0.18).
  EXPECT_EQ(k, (std::vector<std::int64_t>{8, 7, 6, 4, 3, 2, 1}));
}

TEST(SyncPolicy, AdaptiveLengthensThePeriodAsTheLearningRateDecaysFasterThanTheLossFalls) {
  // A step schedule (0.1, then 0.01, then 0.001) with a slowly falling loss: the period rises
  // while the loss falls, up to k_max.
  SyncPolicy p(adaptive(4, 16, /*begin=*/10));
  EXPECT_TRUE(p.exchanges_gradients(9));
  EXPECT_FALSE(p.exchanges_gradients(10));
  EXPECT_EQ(p.next_average_step(), 13);
  const std::vector<double> losses = {1.0, 0.9, 0.8, 0.7, 0.6, 0.5};
  const std::vector<double> lrs = {0.1, 0.1, 0.01, 0.01, 0.001, 0.001};
  const std::vector<std::int64_t> k = periods(p, losses, lrs);
  // ceil(sqrt(0.1/lr * loss) * 4): 4, 4 (3.79), 12 (11.31), 11 (10.58), 16 (30.98 clamped), 16.
  EXPECT_EQ(k, (std::vector<std::int64_t>{4, 4, 12, 11, 16, 16}));
}

TEST(SyncPolicy, AdaptiveRejectsANanLossWithoutChangingItsSchedule) {
  SyncPolicy p(adaptive(4, 16));
  EXPECT_THROW(p.averaged(3, std::numeric_limits<double>::quiet_NaN(), 0.1),
               std::invalid_argument);
  EXPECT_EQ(p.next_average_step(), 3);
  // The failed first point set no reference: the next good one is the first.
  EXPECT_EQ(p.averaged(3, 2.0, 0.1), 4);
  EXPECT_EQ(p.averaged(7, 0.5, 0.1), 2);  // sqrt(0.5 / 2) * 4
}

TEST(SyncPolicy, SaveThenLoadContinuesTheSameSchedule) {
  SyncPolicy a(adaptive(8, 16));
  periods(a, {2.0, 1.0, 0.5}, {0.1, 0.1, 0.05});
  std::stringstream saved;
  a.save_state(saved);
  SyncPolicy b(adaptive(8, 16));
  b.load_state(saved);
  EXPECT_EQ(b.period(), a.period());
  EXPECT_EQ(b.next_average_step(), a.next_average_step());
  // The reference figures came along: the same inputs give the same periods.
  const std::vector<double> losses = {0.4, 0.3, 0.2}, lrs = {0.05, 0.01, 0.01};
  EXPECT_EQ(periods(b, losses, lrs), periods(a, losses, lrs));
}

TEST(SyncPolicy, LoadRejectsOtherModesSettingsAndTruncatedStreams) {
  SyncPolicy source(local(4));
  run(source, 10);
  std::stringstream saved;
  source.save_state(saved);
  const std::string bytes = saved.str();

  SyncPolicy other_mode(adaptive(4, 16));
  std::istringstream in1(bytes);
  EXPECT_THROW(other_mode.load_state(in1), std::runtime_error);
  EXPECT_EQ(other_mode.next_average_step(), 3);  // unchanged

  SyncPolicy other_k(local(8));
  std::istringstream in2(bytes);
  EXPECT_THROW(other_k.load_state(in2), std::runtime_error);
  EXPECT_EQ(other_k.next_average_step(), 7);

  SyncPolicy same(local(4));
  std::istringstream in3(bytes.substr(0, bytes.size() - 3));
  EXPECT_THROW(same.load_state(in3), std::runtime_error);
  EXPECT_EQ(same.next_average_step(), 3);
  std::istringstream in4(bytes);
  same.load_state(in4);
  EXPECT_EQ(same.next_average_step(), 11);

  std::istringstream garbage("not a state stream at all");
  EXPECT_THROW(same.load_state(garbage), std::runtime_error);
}

}  // namespace
}  // namespace gw::sync_policies
