// GRADWIRE_COMPRESSOR=auto's cost model (Note [The auto cost model]) on synthetic inputs: the link
// fit, the predicted step against the formulas, the ordering they give, the accuracy bound, and
// the edge cases that must keep dense.
#include "plugin/auto/cost_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

namespace gw::autotune {
namespace {

Candidate candidate(const char* name, double bytes, double calls, double codec, double drop = 0) {
  Candidate c;
  c.name = name;
  c.bytes_per_step = bytes;
  c.collectives_per_step = calls;
  c.codec_s = codec;
  c.accuracy_known = true;
  c.accuracy_drop_points = drop;
  return c;
}

// The MLP's figures at 4 ranks, roughly: dense's 8 MB, fp16's 4 MB, dgc's 15 kB a step.
std::vector<Candidate> mlp() {
  return {candidate("none", 8.0e6, 2, 0.0), candidate("fp16", 4.0e6, 2, 0.002, -0.04),
          candidate("dgc", 1.5e4, 9, 0.004, -0.36), candidate("powersgd", 3.2e4, 4, 0.006, 2.07)};
}

// A link of `mbit` Mbit/s, 0.2 ms a collective, no burst.
Link link_at(double mbit) {
  Link l;
  l.latency_s = 2e-4;
  l.seconds_per_byte = 8.0 / (mbit * 1e6);
  l.burst_seconds_per_byte = l.seconds_per_byte;
  return l;
}

// 1 ms a collective, 1 us a byte sustained, its first 1000 bytes at 10 ns each.
Link burst_link() {
  Link l;
  l.latency_s = 1e-3;
  l.seconds_per_byte = 1e-6;
  l.burst_bytes = 1000;
  l.burst_seconds_per_byte = 1e-8;
  return l;
}

// Probes run back to back through a token bucket of `burst` bytes, full at the start, refilled at
// the sustained rate 1 / beta whenever it is not sending at that rate, draining at 1 / beta0 while
// it holds tokens: doubling from 16 kB until one takes `stop` seconds or, with `settle`, until
// the link has settled (probes_settled), as the probes do.
std::vector<ProbePoint> token_bucket_probes(double alpha, double beta, double beta0, double burst,
                                            double stop, bool settle = false) {
  std::vector<ProbePoint> points;
  double level = burst;
  for (double b = 16384;; b *= 2) {
    const double free = std::min(b, level);
    const double t = alpha + free * beta0 + (b - free) * beta;
    level = std::min(burst, level - free + (alpha + free * beta0) / beta);
    points.push_back({b, t});
    if (t >= stop || (settle && probes_settled(alpha, points))) return points;
  }
}

TEST(AutoCostModel, FitRecoversLatencyRateAndBurstOfATokenBucket) {
  // tbf at 10 Mbit/s with a 64 kB bucket, and at 100 Mbit/s; 0.3 ms latency, 100 MB/s in the
  // burst.
  for (const double beta : {8e-7, 8e-8}) {
    const double alpha = 3e-4, beta0 = 1e-8, burst = 65536;
    const std::vector<ProbePoint> points = token_bucket_probes(alpha, beta, beta0, burst, 0.06);
    const Link l = fit_link(alpha, points);
    EXPECT_DOUBLE_EQ(l.latency_s, alpha);
    EXPECT_NEAR(l.seconds_per_byte, beta, 0.01 * beta) << beta;
    // The level at the start, and what refilled while the first probes waited on latency (at
    // 100 Mbit/s, 4 kB a probe).
    EXPECT_GE(l.burst_bytes, burst) << beta;
    EXPECT_LE(l.burst_bytes, 1.3 * burst) << beta;
    EXPECT_NEAR(l.burst_seconds_per_byte, beta0, 1e-12) << beta;
  }
  // No bucket: the rate, and no burst.
  const Link plain = fit_link(3e-4, token_bucket_probes(3e-4, 8e-7, 8e-7, 0, 0.06));
  EXPECT_NEAR(plain.seconds_per_byte, 8e-7, 1e-12);
  EXPECT_EQ(plain.burst_bytes, 0.0);
  EXPECT_EQ(plain.burst_seconds_per_byte, plain.seconds_per_byte);
}

TEST(AutoCostModel, ProbesStopOnceTheLinkSettlesAndTheFitStillHolds) {
  // tbf at 10, 100 and 1000 Mbit/s, with the buckets the harness's links showed (64 kB; 512 kB
  // at 1 Gbit/s): stopping once settled gives the same rate and burst as running on.
  for (const double mbit : {10.0, 100.0, 1000.0}) {
    const double alpha = 7e-5, beta0 = 1e-9, beta = 8.0 / (mbit * 1e6);
    const double burst = mbit < 1000 ? 65536 : 524288;
    const std::vector<ProbePoint> full = token_bucket_probes(alpha, beta, beta0, burst, 0.06);
    const std::vector<ProbePoint> settled =
        token_bucket_probes(alpha, beta, beta0, burst, 0.06, /*settle=*/true);
    const Link l = fit_link(alpha, settled);
    EXPECT_NEAR(l.seconds_per_byte, beta, 0.01 * beta) << mbit;
    EXPECT_GE(l.burst_bytes, 0.95 * burst) << mbit;
    EXPECT_LE(l.burst_bytes, 1.3 * burst) << mbit;
    EXPECT_NEAR(l.burst_seconds_per_byte, beta0, 1e-12) << mbit;
    if (mbit >= 100) {
      // Two probes fewer at least: the 60 ms one and the one before it are never run.
      EXPECT_LE(settled.size() + 2, full.size()) << mbit;
      EXPECT_LT(settled.back().seconds, 0.06) << mbit;
    } else {
      // At 10 Mbit/s the bucket is still draining when a probe first takes 60 ms.
      EXPECT_EQ(settled.size(), full.size());
    }
  }
}

TEST(AutoCostModel, ProbesHaveNotSettledWhileTheBurstDrainsOrTheyAreShort) {
  // The second ran partly on the bucket's tokens: 10% faster a byte than the third.
  EXPECT_FALSE(probes_settled(0, {{1e6, 0.009}, {2e6, 0.020}}));
  EXPECT_TRUE(probes_settled(0, {{1e6, 0.0098}, {2e6, 0.020}}));
  // The same rates, but under 5 ms beyond the latency: latency's noise could make them agree.
  EXPECT_FALSE(probes_settled(1e-3, {{1e5, 0.005}, {2e5, 0.009}}));
  EXPECT_TRUE(probes_settled(1e-3, {{1e5, 0.0065}, {2e5, 0.012}}));
  // One probe: nothing to compare it with.
  EXPECT_FALSE(probes_settled(0, {{1e6, 0.5}}));
}

TEST(AutoCostModel, FitOfAFlatNoisyLinkTakesTheLastRateAndNoBurst) {
  // Every probe about as long (shared memory): the largest probe's rate, and what the others sent
  // in their time is within it.
  const std::vector<ProbePoint> points = {{1e5, 1.2e-3}, {2e5, 1.3e-3}, {4e5, 1.25e-3}};
  const Link l = fit_link(1e-3, points);
  EXPECT_NEAR(l.seconds_per_byte, 0.25e-3 / 4e5, 1e-15);
  EXPECT_EQ(l.burst_bytes, 0.0);
}

TEST(AutoCostModel, FitRefusesNoProbes) { EXPECT_THROW(fit_link(0, {}), std::invalid_argument); }

TEST(AutoCostModel, PredictionIsTheFormula) {
  const Link l = burst_link();
  StepInputs s{0.010, 0.002, 0.003};
  // 5000 bytes: 1000 in the burst, 4000 at the sustained rate; 3 collectives; 1 ms codec.
  const Prediction p = predict(l, s, candidate("x", 5000, 3, 0.001));
  const double comm = 3 * 1e-3 + 1000 * 1e-8 + 4000 * 1e-6;
  EXPECT_DOUBLE_EQ(p.comm_s, comm);
  EXPECT_DOUBLE_EQ(p.exposed_s, 0.001 + comm - 0.003);
  EXPECT_DOUBLE_EQ(p.step_s, 0.010 + 0.002 + 0.001 + comm - 0.003);
  EXPECT_FALSE(p.link_bound);
  // The overlap hides what fits in it, no more.
  const Prediction hidden = predict(l, StepInputs{0.010, 0.002, 1.0}, candidate("x", 5000, 3, 0));
  EXPECT_DOUBLE_EQ(hidden.exposed_s, 0.0);
  EXPECT_DOUBLE_EQ(hidden.step_s, 0.012);
  // A message that fits the burst once but is sent every short step: the refill bounds it.
  const Prediction bound = predict(l, StepInputs{0.0001, 0, 0}, candidate("x", 900, 0, 0));
  EXPECT_TRUE(bound.link_bound);
  EXPECT_DOUBLE_EQ(bound.step_s, 900 * 1e-6);
}

TEST(AutoCostModel, TheLastBucketIsExposedWhateverTheOverlap) {
  const Link l = burst_link();
  // 5000 bytes in two buckets, the last one 2000 of them: it goes after 3000 bytes have used the
  // burst, so all of it at the sustained rate; 2 of the 3 collectives, 0.4 ms of the codec.
  Candidate c = candidate("x", 5000, 3, 0.001);
  c.last_bytes = 2000;
  c.last_collectives = 2;
  c.last_codec_s = 0.0004;
  const Prediction p = predict(l, StepInputs{0.010, 0.002, 1.0}, c);
  const double tail = 0.0004 + 2 * 1e-3 + 2000 * 1e-6;
  EXPECT_DOUBLE_EQ(p.tail_s, tail);
  EXPECT_DOUBLE_EQ(p.work_s, 0.001 + p.comm_s);
  EXPECT_DOUBLE_EQ(p.exposed_s, tail);  // a second of overlap hides the rest, not the tail
  EXPECT_DOUBLE_EQ(p.step_s, 0.012 + tail);
  // The last bucket first in line for the burst when it is the whole step.
  c.last_bytes = 5000;
  EXPECT_DOUBLE_EQ(predict(l, StepInputs{}, c).tail_s,
                   0.0004 + 2 * 1e-3 + 1000 * 1e-8 + 4000 * 1e-6);
  // On the host's cores nothing hides: the whole exchange is exposed.
  StepInputs host{0.010, 0.002, 1.0};
  host.backward_on_host = true;
  c.last_bytes = 2000;
  const Prediction h = predict(l, host, c);
  EXPECT_DOUBLE_EQ(h.exposed_s, h.work_s);
  EXPECT_DOUBLE_EQ(h.step_s, 0.012 + 0.001 + h.comm_s);
}

TEST(AutoCostModel, ATimedExchangeReplacesTheModelAndGetsTheBurstBack) {
  const Link l = burst_link();
  Candidate c = candidate("x", 5000, 3, 0.5);  // the codec no longer counts
  c.last_bytes = 500;
  c.exchange_s = 0.020;
  c.last_exchange_s = 0.004;
  const Prediction p = predict(l, StepInputs{0.010, 0.002, 0.003}, c);
  // It ran at the sustained rate; in a step 1000 bytes go in the burst, all of them before the
  // last bucket's.
  EXPECT_DOUBLE_EQ(p.work_s, 0.020 - 1000 * (1e-6 - 1e-8));
  EXPECT_DOUBLE_EQ(p.tail_s, 0.004);
  EXPECT_DOUBLE_EQ(p.exposed_s, p.work_s - 0.003);
  EXPECT_DOUBLE_EQ(p.step_s, 0.012 + p.work_s - 0.003);
  // A timed exchange shorter than its burst's saving: nothing, not a negative time.
  c.exchange_s = 0.0001;
  c.last_exchange_s = 0.0001;
  c.last_bytes = 5000;
  const Prediction q = predict(l, StepInputs{}, c);
  EXPECT_EQ(q.work_s, 0.0);
  EXPECT_EQ(q.tail_s, 0.0);
  EXPECT_DOUBLE_EQ(q.step_s, 5000 * 1e-6);  // the refill still bounds it
}

TEST(AutoCostModel, LocalSgdPaysOneWholeExposedExchangeEveryPeriod) {
  const Link l = burst_link();
  // Per step, as the strategy hands them over: one averaging's 8000 bytes, 2 collectives and
  // 40 ms spread over 4 steps.
  Candidate c = candidate("local_sgd", 2000, 0.5, 0.0);
  c.period = 4;
  const StepInputs s{0.010, 0.002, 1.0};  // a second of overlap: it hides nothing after update
  const Prediction modelled = predict(l, s, c);
  const double once = 2 * 1e-3 + 1000 * 1e-8 + 7000 * 1e-6;  // the burst once per averaging
  EXPECT_DOUBLE_EQ(modelled.comm_s, once / 4);
  EXPECT_DOUBLE_EQ(modelled.exposed_s, once / 4);
  EXPECT_DOUBLE_EQ(modelled.step_s, 0.012 + once / 4);
  c.exchange_s = 0.040 / 4;
  const Prediction timed = predict(l, s, c);
  EXPECT_DOUBLE_EQ(timed.exposed_s, (0.040 - 1000 * (1e-6 - 1e-8)) / 4);
  // Against a synchronous candidate of the same exchange every step, at 4 times the bytes.
  Candidate every = candidate("none", 8000, 2, 0.0);
  every.exchange_s = 0.040;
  every.last_exchange_s = 0.040;
  every.last_bytes = 8000;
  const Choice choice = choose(l, s, {every, c}, 0.5);
  EXPECT_EQ(choice.chosen, 1u);
  // The refill: 2000 bytes a step at the sustained rate bound a step of no compute.
  c.exchange_s = 0;
  EXPECT_DOUBLE_EQ(predict(l, StepInputs{}, c).step_s, 2000 * 1e-6);
}

TEST(AutoCostModel, OrderingFollowsTheFormulasAcrossRates) {
  const StepInputs s{0.010, 0.001, 0.002};
  // At 10 and 100 Mbit/s the bytes decide: dgc; powersgd would be close but is out of bounds.
  for (double mbit : {10.0, 100.0, 1000.0}) {
    const Choice c = choose(link_at(mbit), s, mlp(), 0.5);
    EXPECT_EQ(mlp()[c.chosen].name, "dgc") << mbit;
    EXPECT_EQ(c.verdicts[3], "accuracy drop 2.07 points > the bound 0.50");
    // The ordering of the predictions is the one the formula gives: fewer bytes, faster.
    EXPECT_GT(c.predictions[0].step_s, c.predictions[1].step_s) << mbit;
    EXPECT_GT(c.predictions[1].step_s, c.predictions[2].step_s) << mbit;
  }
  // At 100 Gbit/s dense's 8 MB cost 0.64 ms, less than fp16's and dgc's encoding: dense.
  const Choice fast = choose(link_at(100000), s, mlp(), 0.5);
  EXPECT_EQ(fast.chosen, 0u);
  EXPECT_EQ(fast.verdicts[0], "chosen");
  EXPECT_EQ(fast.verdicts[1], "slower");
  // A wider bound lets powersgd in where it is fastest: no codec cost and few bytes.
  std::vector<Candidate> cheap = mlp();
  cheap[3].codec_s = 0;
  cheap[2].codec_s = 0.02;
  EXPECT_EQ(choose(link_at(10), s, cheap, 3.0).chosen, 3u);
  EXPECT_EQ(choose(link_at(10), s, cheap, 0.5).chosen, 2u);
}

TEST(AutoCostModel, EdgeCasesChooseDense) {
  const StepInputs s{0.010, 0.001, 0.002};
  // Infinite bandwidth and no latency: every exchange is free, and only the codecs cost.
  EXPECT_EQ(choose(Link{}, s, mlp(), 0.5).chosen, 0u);
  // No compute at all over a free link: the same.
  EXPECT_EQ(choose(Link{}, StepInputs{}, mlp(), 0.5).chosen, 0u);
  // One rank: nothing is sent by anyone (no bytes, no collectives), and no codec was timed.
  std::vector<Candidate> alone = mlp();
  for (Candidate& c : alone) c.bytes_per_step = c.collectives_per_step = c.codec_s = 0;
  EXPECT_EQ(choose(link_at(10), s, alone, 0.5).chosen, 0u);
  // A gain within kMinGain keeps the simpler one.
  std::vector<Candidate> close = {candidate("none", 0, 1, 0), candidate("fp16", 0, 1, 0)};
  close[0].codec_s = 0.0100;
  close[1].codec_s = 0.0100 * (1 - kMinGain / 2);
  EXPECT_EQ(choose(Link{}, StepInputs{}, close, 0.5).chosen, 0u);
}

TEST(AutoCostModel, EligibilityNeedsAMeasuredCostOrTheUsersNameAndRunsHere) {
  const StepInputs s{0.010, 0.001, 0.002};
  std::vector<Candidate> c = mlp();
  c[2].accuracy_known = false;  // dgc, unmeasured and not named: out
  Choice out = choose(link_at(10), s, c, 0.5);
  EXPECT_EQ(c[out.chosen].name, "fp16");
  EXPECT_NE(out.verdicts[2].find("no accuracy run"), std::string::npos);
  c[2].named = true;  // named: in
  EXPECT_EQ(c[choose(link_at(10), s, c, 0.5).chosen].name, "dgc");
  c[2].excluded = "needs an SGD inner optimizer";  // cannot run: out, whatever else
  out = choose(link_at(10), s, c, 0.5);
  EXPECT_EQ(c[out.chosen].name, "fp16");
  EXPECT_EQ(out.verdicts[2], "needs an SGD inner optimizer");
  // Nothing eligible is an error, not a silent dense.
  for (Candidate& x : c) x.excluded = "no";
  EXPECT_THROW(choose(link_at(10), s, c, 0.5), std::invalid_argument);
}

}  // namespace
}  // namespace gw::autotune
