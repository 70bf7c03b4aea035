// GRADWIRE_COMPRESSOR=auto's pieces, each without mpirun: the probe sequence against a simulated
// token-bucket link, the cross-rank combine's packing, local SGD's spread over its period, the
// byte estimates of one bucket's trial, and the accuracy table as data (built in, or from a file
// whose mistakes are named).
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "plugin/auto/accuracy_table.h"
#include "plugin/auto/link_probe.h"
#include "plugin/auto/measured.h"
#include "plugin/auto/trials.h"
#include "plugin/compressor_factory.h"
#include "plugin/config/config.h"
#include "plugin/config/params.h"
#include "plugin/config/registry.h"

namespace gw {
namespace {

// A link of `mbit` Mbit/s, 0.2 ms a collective, whose token bucket lets `burst` bytes through at
// ten times the rate first (as tc's tbf does), full at the start of the probes.
struct SimulatedLink {
  double beta, burst, sent = 0;
  SimulatedLink(double mbit, double burst_bytes) : beta(8.0 / (mbit * 1e6)), burst(burst_bytes) {}
  autotune::ProbePoint probe(std::size_t floats) {
    const double bytes = 8.0 * static_cast<double>(floats);  // 2(n-1)/n of 4 bytes at n = 2
    const double fast = std::max(0.0, std::min(bytes, burst - sent));
    sent += bytes;
    return {bytes, 2e-4 + fast * beta / 10 + (bytes - fast) * beta};
  }
};

TEST(AutoLinkProbe, DoublesUntilTheLinkSettlesOrAProbeTakesLongEnough) {
  for (double mbit : {10.0, 100.0, 1000.0}) {
    SimulatedLink link(mbit, 64e3);
    std::vector<std::size_t> sizes;
    const std::vector<autotune::ProbePoint> points =
        run_probes(2e-4, std::size_t{1} << 24, [&](std::size_t floats) {
          sizes.push_back(floats);
          return link.probe(floats);
        });
    ASSERT_EQ(points.size(), sizes.size());
    EXPECT_EQ(sizes.front(), kFirstProbeFloats) << mbit;
    for (std::size_t i = 1; i < sizes.size(); ++i) EXPECT_EQ(sizes[i], 2 * sizes[i - 1]);
    // It stopped for a reason: a long probe, or a settled link; not one probe earlier.
    const bool long_enough = points.back().seconds >= kProbeSeconds;
    EXPECT_TRUE(long_enough || autotune::probes_settled(2e-4, points)) << mbit;
    std::vector<autotune::ProbePoint> before(points.begin(), points.end() - 1);
    EXPECT_FALSE(before.back().seconds >= kProbeSeconds || autotune::probes_settled(2e-4, before))
        << mbit;
    // And the fit finds the sustained rate.
    EXPECT_NEAR(autotune::fit_link(2e-4, points).seconds_per_byte, link.beta, 0.01 * link.beta);
  }
}

TEST(AutoLinkProbe, StopsAtTheGradientsSize) {
  SimulatedLink link(1e6, 0);  // a link so fast that nothing else would stop it
  std::size_t probes = 0;
  const auto points = run_probes(0, 3 * kFirstProbeFloats, [&](std::size_t floats) {
    ++probes;
    EXPECT_LE(floats, 3 * kFirstProbeFloats);
    return link.probe(floats);
  });
  EXPECT_EQ(probes, points.size());
  EXPECT_DOUBLE_EQ(points.back().bytes, 8.0 * 3 * kFirstProbeFloats);
}

TEST(AutoCombine, PacksAndUnpacksEveryInputAndRefusesAMismatch) {
  AutoMeasured m(2);
  m.step.compute_s = 0.01;
  m.step.overlap_s = 0.002;
  m.codec_s = {1, 2};
  m.bytes_per_step = {3, 4};
  m.last_codec_s = {5, 6};
  m.last_bytes = {7, 8};
  m.exchange_s = {9, -1};
  m.last_exchange_s = {10, -1};
  autotune::StepInputs step;
  std::vector<autotune::Candidate> c(2);
  unpack(pack(m, true), step, c);
  EXPECT_DOUBLE_EQ(step.compute_s, 0.01);
  EXPECT_DOUBLE_EQ(step.overlap_s, 0.002);
  EXPECT_TRUE(step.backward_on_host);
  EXPECT_DOUBLE_EQ(c[1].codec_s, 2);
  EXPECT_DOUBLE_EQ(c[1].bytes_per_step, 4);
  EXPECT_DOUBLE_EQ(c[0].last_exchange_s, 10);
  EXPECT_FALSE(c[1].exchange_measured());
  m.last_bytes.push_back(1);  // an injection that forgot a candidate's length
  EXPECT_THROW(pack(m, false), std::logic_error);
  EXPECT_THROW(unpack(std::vector<double>(5), step, c), std::logic_error);
}

TEST(AutoCombine, LocalSgdSpreadsOneAveragingOverItsPeriod) {
  std::vector<autotune::Candidate> c(2);
  for (autotune::Candidate& x : c) {
    x.bytes_per_step = 800;
    x.collectives_per_step = 8;
    x.codec_s = 0.8;
    x.exchange_s = 0.4;
    x.last_exchange_s = -1;
  }
  c[1].period = 8;
  spread_over_period(c);
  EXPECT_DOUBLE_EQ(c[0].bytes_per_step, 800);
  EXPECT_DOUBLE_EQ(c[1].bytes_per_step, 100);
  EXPECT_DOUBLE_EQ(c[1].collectives_per_step, 1);
  EXPECT_DOUBLE_EQ(c[1].codec_s, 0.1);
  EXPECT_DOUBLE_EQ(c[1].exchange_s, 0.05);
  EXPECT_DOUBLE_EQ(c[1].last_exchange_s, -1.0 / 8);
}

TEST(AutoTrials, ByteEstimatesFollowTheAlgorithmsNotes) {
  WireEstimate flat;
  flat.world_size = 4;
  ExchangeTrial t;
  t.dense_elements = 1000;  // 2 (n - 1) / n x 4000 bytes
  t.sparse = t.split = true;
  t.sparse_words = 400;  // 3 W (n - 1) / n words
  double bytes = 0, calls = 0;
  flat.sent(t, bytes, calls);
  EXPECT_DOUBLE_EQ(bytes, 6000.0 + 4.0 * 3 * 400 * 3 / 4);
  EXPECT_DOUBLE_EQ(calls, 5);
  // Two nodes of two ranks: the dense part's shard and the split's steps 3 and 5 cross.
  WireEstimate two = flat;
  two.across = true;
  two.nodes = 2;
  two.local = 2;
  two.cross_size = 2;
  two.sent(t, bytes, calls);
  EXPECT_DOUBLE_EQ(bytes, 500.0 * 4 + 4.0 * 3 * 400 * 1 / 4);
  EXPECT_DOUBLE_EQ(calls, 9);
  t.split = false;  // the allgatherv: W to each rank of another node
  two.sent(t, bytes, calls);
  EXPECT_DOUBLE_EQ(bytes, 2000.0 + 4.0 * 400 * 2);
}

TEST(AutoAccuracyTable, BuiltInHoldsEveryMeasuredCandidate) {
  const AccuracyTable t = AccuracyTable::built_in();
  ASSERT_NE(t.find(AutoOption::kDgc, 0), nullptr);
  ASSERT_NE(t.find(AutoOption::kPowerSgd, 4), nullptr);
  EXPECT_EQ(t.find(AutoOption::kPowerSgd, 4)->strategy, "powersgd_r4");
  EXPECT_EQ(t.find(AutoOption::kPowerSgd, 2), nullptr);  // no run at rank 2
  EXPECT_EQ(t.find(AutoOption::kNone, 0), nullptr);      // the baseline has no cost
}

// The built-in table is what the committed accuracy reports give (tools/results.py writes
// results/auto_accuracy.json from them): a new report changes what auto decides only once someone
// updates AccuracyTable::built_in() to match (Note [Accuracy costs as data]). Run alone as
// auto_accuracy_table_current.
TEST(AutoAccuracyTable, BuiltInIsWhatTheCommittedReportsGive) {
  const AccuracyTable measured =
      AccuracyTable::from_file(std::string(GW_RESULTS_DIR) + "/auto_accuracy.json");
  const AccuracyTable built_in = AccuracyTable::built_in();
  ASSERT_EQ(built_in.entries().size(), measured.entries().size())
      << "update AccuracyTable::built_in() (plugin/auto/accuracy_table.cc) to "
         "results/auto_accuracy.json";
  for (std::size_t i = 0; i < measured.entries().size(); ++i) {
    const AccuracyEntry& m = measured.entries()[i];
    const AccuracyEntry& b = built_in.entries()[i];
    EXPECT_EQ(b.option, m.option) << "entry " << i;
    EXPECT_EQ(b.parameter, m.parameter) << "entry " << i;
    EXPECT_EQ(b.drop_points, m.drop_points) << "entry " << i << " (" << m.strategy << ")";
    EXPECT_EQ(b.seeds, m.seeds) << "entry " << i;
    EXPECT_EQ(b.strategy, m.strategy) << "entry " << i;
  }
}

TEST(AutoAccuracyTable, AFileReplacesItAndItsMistakesAreNamed) {
  const AccuracyTable t = AccuracyTable::from_json(
      R"({"about": "x", "entries": [{"candidate": "dgc", "parameter": 0, "drop_points": 5.5,
          "seeds": 2, "strategy": "mine"}]})",
      "f.json");
  ASSERT_EQ(t.entries().size(), 1u);
  EXPECT_DOUBLE_EQ(t.find(AutoOption::kDgc, 0)->drop_points, 5.5);
  const auto refused = [](const std::string& text, const std::string& part) {
    try {
      AccuracyTable::from_json(text, "f.json");
      ADD_FAILURE() << "accepted " << text;
    } catch (const config::ConfigError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("GRADWIRE_AUTO_ACCURACY_FILE: f.json"), std::string::npos) << what;
      EXPECT_NE(what.find(part), std::string::npos) << what;
    }
  };
  const std::string entry = R"("parameter": 0, "drop_points": 1, "seeds": 1, "strategy": "s")";
  refused("{", "not JSON");
  refused(R"({"entries": 3})", "no \"entries\" array");
  refused(R"({"entries": [{"candidate": "zip", )" + entry + "}]}", "entry 0: 'candidate'");
  refused(R"({"entries": [{"candidate": "dgc", "colour": 1, )" + entry + "}]}",
          "unknown field 'colour'");
  refused(R"({"entries": [{"candidate": "dgc", "parameter": 0}]})", "missing field 'drop_points'");
  refused(R"({"entries": [{"candidate": "dgc", "parameter": -1, "drop_points": 1, "seeds": 1,
             "strategy": "s"}]})",
          "'parameter' must be a whole number");
  refused(R"({"entries": [{"candidate": "dgc", )" + entry + R"(}, {"candidate": "dgc", )" + entry +
              "}]}",
          "entry 1: a second entry for dgc");
  EXPECT_THROW(AccuracyTable::from_file("/nonexistent/auto_accuracy.json"), config::ConfigError);
}

}  // namespace
// GRADWIRE_AUTO_* without auto have no effect, and are refused as AMP's are without AMP.
TEST(AutoSettings, RefusedWithoutAuto) {
  namespace keys = config::keys;
  for (const char* key : {keys::kAutoCandidates, keys::kAutoMaxAccuracyDrop,
                          keys::kAutoAccuracyFile, keys::kAutoCheckSteps}) {
    config::Config c;
    c.set(keys::kCompressor, "dgc");
    c.set(key, std::string(key) == keys::kAutoCandidates ? "bogus" : "1");
    try {
      read_compressor_settings(c);
      ADD_FAILURE() << key << " without auto was accepted";
    } catch (const config::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string(key) + "=" + c.text(key) +
                                           " has no effect without auto"),
                std::string::npos)
          << e.what();
    }
    c.set(keys::kCompressor, "auto");
    if (std::string(key) != keys::kAutoCandidates) EXPECT_NO_THROW(read_compressor_settings(c));
  }
}

}  // namespace gw
