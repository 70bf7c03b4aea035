// LossScaler: scripted overflow / clean sequences with the exact scale after every step
// (Note [Dynamic loss scaling]), the history, static mode, option validation and save/load.
#include "amp/loss_scaler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "amp_test_util.h"

namespace gw::amp {
namespace {

constexpr bool kInf = true;  // the step's gradients overflowed
constexpr bool kClean = false;

LossScalerOptions small(float init = 8.0f, std::int64_t interval = 3, float min = 1.0f) {
  LossScalerOptions o;
  o.init_scale = init;
  o.growth_interval = interval;
  o.growth_factor = 2.0f;
  o.backoff_factor = 0.5f;
  o.min_scale = min;
  return o;
}

// "step:scale:event" per history entry, space-separated: readable when a comparison fails.
std::string trace(const std::vector<ScaleChange>& history) {
  std::ostringstream out;
  for (const ScaleChange& c : history) {
    out << (out.tellp() > 0 ? " " : "") << c.step << ':' << c.scale << ':' << to_string(c.event);
  }
  return out.str();
}

// Everything observable about a scaler, for "unchanged" and "identical" checks.
std::string snapshot(const LossScaler& s) {
  std::ostringstream out;
  out << "scale " << s.scale() << " streak " << s.clean_streak() << " skipped " << s.skipped_steps()
      << " consecutive " << s.consecutive_skips() << " last " << s.last_step() << " floor "
      << s.at_floor() << " history " << trace(s.history());
  return out.str();
}

// One scripted step: its outcome and the scale expected after it.
struct Step {
  bool found_inf;
  float scale_after;
};

// Runs `script` from step `first`, checking the return value and the scale after each step.
void play(LossScaler& s, std::int64_t first, const std::vector<Step>& script) {
  for (std::size_t i = 0; i < script.size(); ++i) {
    const std::int64_t step = first + static_cast<std::int64_t>(i);
    EXPECT_EQ(s.update(step, script[i].found_inf), script[i].found_inf) << "step " << step;
    EXPECT_EQ(s.scale(), script[i].scale_after) << "step " << step;
  }
}

using testing::invalid_argument_of;

TEST(ScaleEvent, Names) {
  EXPECT_STREQ(to_string(ScaleEvent::kInitial), "initial");
  EXPECT_STREQ(to_string(ScaleEvent::kBackoff), "backoff");
  EXPECT_STREQ(to_string(ScaleEvent::kGrowth), "growth");
}

TEST(LossScaler, DefaultsAreTheUsualOnes) {
  const LossScaler s;
  EXPECT_EQ(s.scale(), 32768.0f);
  EXPECT_EQ(s.options().growth_interval, 1000);
  EXPECT_TRUE(s.options().dynamic);
  EXPECT_EQ(trace(s.history()), "-1:32768:initial");
  EXPECT_EQ(s.last_step(), -1);
  EXPECT_FALSE(s.at_floor());
}

TEST(LossScaler, GrowsAfterExactlyIntervalCleanStepsAndAnOverflowRestartsTheCount) {
  LossScaler s(small());
  // clang-format off
  play(s, 0,
       {{kClean, 8}, {kClean, 8}, {kClean, 16},  // the third clean step in a row grows
        {kClean, 16}, {kClean, 16},              // two clean steps ...
        {kInf, 8},                               // ... an overflow: back off, count from 0
        {kClean, 8}, {kClean, 8},                // two clean steps are not yet three
        {kClean, 16}});
  // clang-format on
  EXPECT_EQ(trace(s.history()), "-1:8:initial 2:16:growth 5:8:backoff 8:16:growth");
  EXPECT_EQ(s.skipped_steps(), 1);
  EXPECT_EQ(s.consecutive_skips(), 0);
  EXPECT_EQ(s.clean_streak(), 0);
  play(s, 9, {{kClean, 16}});
  EXPECT_EQ(s.clean_streak(), 1);
}

TEST(LossScaler, BacksOffToTheFloorAndStaysThereCountingSkips) {
  LossScaler s(small());
  // clang-format off
  play(s, 0,
       {{kInf, 4}, {kInf, 2}, {kInf, 1},  // 8 -> 4 -> 2 -> 1 = min_scale
        {kInf, 1}, {kInf, 1}});           // at the floor: still skipped, no change
  // clang-format on
  EXPECT_TRUE(s.at_floor());
  EXPECT_EQ(s.skipped_steps(), 5);
  EXPECT_EQ(s.consecutive_skips(), 5);
  // No entry for a backoff that changes nothing.
  EXPECT_EQ(trace(s.history()), "-1:8:initial 0:4:backoff 1:2:backoff 2:1:backoff");
  // Clean steps climb off the floor again.
  play(s, 5, {{kClean, 1}, {kClean, 1}, {kClean, 2}});
  EXPECT_FALSE(s.at_floor());
  EXPECT_EQ(s.consecutive_skips(), 0);
  EXPECT_EQ(s.skipped_steps(), 5);
  EXPECT_EQ(trace(s.history()), "-1:8:initial 0:4:backoff 1:2:backoff 2:1:backoff 7:2:growth");
}

TEST(LossScaler, TheFloorClampsABackoffThatWouldGoBelowIt) {
  LossScaler s(small(8, 3, /*min=*/3));
  play(s, 0, {{kInf, 4}, {kInf, 3}, {kInf, 3}});  // 4 * 0.5 = 2 < 3: clamped to 3
  EXPECT_TRUE(s.at_floor());
  EXPECT_EQ(trace(s.history()), "-1:8:initial 0:4:backoff 1:3:backoff");
}

TEST(LossScaler, ALongScriptWithExactScalesCountsAndHistory) {
  LossScaler s(small());
  play(s, 0,
       {{kClean, 8},
        {kInf, 4},
        {kClean, 4},
        {kClean, 4},
        {kClean, 8},
        {kInf, 4},
        {kInf, 2},
        {kInf, 1},
        {kInf, 1},
        {kClean, 1},
        {kInf, 1},
        {kClean, 1},
        {kClean, 1},
        {kClean, 2},
        {kClean, 2},
        {kClean, 2},
        {kClean, 4},
        {kClean, 4}});
  EXPECT_EQ(trace(s.history()),
            "-1:8:initial 1:4:backoff 4:8:growth 5:4:backoff 6:2:backoff 7:1:backoff "
            "13:2:growth 16:4:growth");
  EXPECT_EQ(s.skipped_steps(), 6);
  EXPECT_EQ(s.consecutive_skips(), 0);
  EXPECT_EQ(s.clean_streak(), 1);
  EXPECT_EQ(s.last_step(), 17);
}

TEST(LossScaler, ConsecutiveSkipsCountOverflowsInARow) {
  LossScaler s(small(1024));
  play(s, 0, {{kInf, 512}, {kInf, 256}});
  EXPECT_EQ(s.consecutive_skips(), 2);
  play(s, 2, {{kClean, 256}});
  EXPECT_EQ(s.consecutive_skips(), 0);
  play(s, 3, {{kInf, 128}});
  EXPECT_EQ(s.consecutive_skips(), 1);
  EXPECT_EQ(s.skipped_steps(), 3);
}

TEST(LossScaler, StepsMayHaveGapsButMustIncrease) {
  LossScaler s(small());
  EXPECT_THROW(s.update(-1, kClean), std::logic_error);
  s.update(0, kClean);
  s.update(10, kClean);
  const std::string before = snapshot(s);
  EXPECT_THROW(s.update(10, kClean), std::logic_error);
  EXPECT_THROW(s.update(9, kInf), std::logic_error);
  EXPECT_EQ(snapshot(s), before);  // the rejected calls changed nothing
  s.update(20, kClean);            // third clean update: growth after step 20
  EXPECT_EQ(trace(s.history()), "-1:8:initial 20:16:growth");
}

TEST(LossScaler, StaticModeNeverChangesTheScaleButReportsSkips) {
  LossScalerOptions o = small(8);
  o.dynamic = false;
  o.min_scale = 64;  // only bounds the dynamic scale
  LossScaler s(o);
  play(s, 0,
       {{kClean, 8}, {kClean, 8}, {kClean, 8}, {kClean, 8}, {kInf, 8}, {kInf, 8}, {kClean, 8}});
  EXPECT_EQ(s.skipped_steps(), 2);
  EXPECT_EQ(s.consecutive_skips(), 0);
  EXPECT_EQ(s.clean_streak(), 1);
  EXPECT_FALSE(s.at_floor());
  EXPECT_EQ(trace(s.history()), "-1:8:initial");
}

TEST(LossScaler, GrowthStopsWhereTheScaleWouldOverflowFloat) {
  const float big = std::ldexp(1.0f, 127);  // 2^127; 2^128 is inf in float
  LossScaler s(small(big, 1));
  EXPECT_FALSE(s.update(0, kClean));
  EXPECT_EQ(s.scale(), big);
  EXPECT_EQ(s.clean_streak(), 0);  // the count was reset
  s.update(1, kClean);
  EXPECT_EQ(s.scale(), big);
  EXPECT_EQ(s.history().size(), 1u);
  s.update(2, kInf);
  EXPECT_EQ(s.scale(), std::ldexp(1.0f, 126));
  s.update(3, kClean);
  EXPECT_EQ(s.scale(), big);
  ASSERT_EQ(s.history().size(), 3u);
  EXPECT_EQ(s.history()[2].step, 3);
  EXPECT_EQ(s.history()[2].scale, big);
  EXPECT_EQ(s.history()[2].event, ScaleEvent::kGrowth);

  // With an interval of 2 the reset is visible: a blocked growth starts a new count of 2.
  LossScaler t(small(big, 2));
  t.update(0, kClean);
  t.update(1, kClean);  // blocked
  EXPECT_EQ(t.clean_streak(), 0);
  t.update(2, kClean);
  EXPECT_EQ(t.clean_streak(), 1);
}

TEST(Validate, AcceptsTheDefaultsAndEdgeValues) {
  EXPECT_NO_THROW(validate(LossScalerOptions{}));
  LossScalerOptions o = small(1, 1, 1);  // init == min
  o.backoff_factor = 0.999f;
  o.growth_factor = 1.001f;
  EXPECT_NO_THROW(validate(o));
  o.dynamic = false;
  o.min_scale = 1024;  // init < min is fine without dynamic scaling
  EXPECT_NO_THROW(validate(o));
}

TEST(Validate, NamesTheVariableTheValueAndWhatIsAccepted) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  struct Case {
    LossScalerOptions options;
    const char* expected;  // the whole message
  };
  std::vector<Case> cases;
  const auto with = [](auto set) {
    LossScalerOptions o;
    set(o);
    return o;
  };
  cases.push_back({with([&](auto& o) { o.init_scale = nan; }),
                   "GRADWIRE_AMP_INIT_SCALE is nan; it must be finite and > 0"});
  cases.push_back({with([&](auto& o) { o.init_scale = inf; }),
                   "GRADWIRE_AMP_INIT_SCALE is inf; it must be finite and > 0"});
  cases.push_back({with([](auto& o) { o.init_scale = 0; }),
                   "GRADWIRE_AMP_INIT_SCALE is 0; it must be finite and > 0"});
  cases.push_back({with([](auto& o) { o.init_scale = -8; }),
                   "GRADWIRE_AMP_INIT_SCALE is -8; it must be finite and > 0"});
  cases.push_back({with([&](auto& o) { o.min_scale = nan; }),
                   "GRADWIRE_AMP_MIN_SCALE is nan; it must be finite and > 0"});
  cases.push_back({with([](auto& o) { o.min_scale = 0; }),
                   "GRADWIRE_AMP_MIN_SCALE is 0; it must be finite and > 0"});
  cases.push_back({with([](auto& o) {
                     o.init_scale = 0.5f;
                     o.min_scale = 1;
                   }),
                   "GRADWIRE_AMP_INIT_SCALE is 0.5, below GRADWIRE_AMP_MIN_SCALE (1); with dynamic "
                   "scaling it must be >= GRADWIRE_AMP_MIN_SCALE"});
  cases.push_back({with([](auto& o) { o.growth_interval = 0; }),
                   "GRADWIRE_AMP_GROWTH_INTERVAL is 0; it must be >= 1"});
  cases.push_back({with([](auto& o) { o.growth_interval = -5; }),
                   "GRADWIRE_AMP_GROWTH_INTERVAL is -5; it must be >= 1"});
  cases.push_back({with([](auto& o) { o.growth_factor = 1; }),
                   "GRADWIRE_AMP_GROWTH_FACTOR is 1; it must be finite and > 1"});
  cases.push_back({with([&](auto& o) { o.growth_factor = nan; }),
                   "GRADWIRE_AMP_GROWTH_FACTOR is nan; it must be finite and > 1"});
  cases.push_back({with([&](auto& o) { o.growth_factor = inf; }),
                   "GRADWIRE_AMP_GROWTH_FACTOR is inf; it must be finite and > 1"});
  cases.push_back({with([](auto& o) { o.backoff_factor = 1; }),
                   "GRADWIRE_AMP_BACKOFF_FACTOR is 1; it must be in (0, 1)"});
  cases.push_back({with([](auto& o) { o.backoff_factor = 0; }),
                   "GRADWIRE_AMP_BACKOFF_FACTOR is 0; it must be in (0, 1)"});
  cases.push_back({with([](auto& o) { o.backoff_factor = -0.5f; }),
                   "GRADWIRE_AMP_BACKOFF_FACTOR is -0.5; it must be in (0, 1)"});
  cases.push_back({with([&](auto& o) { o.backoff_factor = nan; }),
                   "GRADWIRE_AMP_BACKOFF_FACTOR is nan; it must be in (0, 1)"});
  for (const Case& c : cases) {
    EXPECT_EQ(invalid_argument_of([&] { validate(c.options); }), c.expected);
    // The constructor validates too.
    EXPECT_THROW(LossScaler{c.options}, std::invalid_argument) << c.expected;
  }
}

// A scaler part-way through: mid-streak after a growth, with skips and a backoff behind it.
LossScaler scripted() {
  LossScaler s(small());
  play(s, 0,
       {{kClean, 8}, {kClean, 8}, {kClean, 16}, {kInf, 8}, {kInf, 4}, {kClean, 4}, {kClean, 4}});
  return s;
}

std::string saved(const LossScaler& s) {
  std::ostringstream out;
  s.save_state(out);
  return out.str();
}

TEST(LossScaler, SaveThenLoadContinuesExactlyTheSameWay) {
  LossScaler a = scripted();
  LossScaler b(small());
  std::istringstream in(saved(a));
  b.load_state(in);
  EXPECT_EQ(snapshot(b), snapshot(a));
  EXPECT_EQ(b.clean_streak(), 2);  // one more clean step grows
  // The same outcomes from here on give the same scales, return values and history.
  const std::vector<bool> outcomes = {kClean, kInf,   kInf,   kInf,   kInf, kClean,
                                      kClean, kClean, kClean, kClean, kInf, kClean};
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    const std::int64_t step = 7 + static_cast<std::int64_t>(i);
    EXPECT_EQ(b.update(step, outcomes[i]), a.update(step, outcomes[i]));
    EXPECT_EQ(snapshot(b), snapshot(a)) << "step " << step;
  }
  EXPECT_EQ(trace(b.history()),
            "-1:8:initial 2:16:growth 3:8:backoff 4:4:backoff 7:8:growth 8:4:backoff "
            "9:2:backoff 10:1:backoff 14:2:growth 17:1:backoff");
  // The last step came along too.
  EXPECT_THROW(b.update(18, kClean), std::logic_error);

  // A fresh scaler round-trips as well.
  LossScaler fresh(small()), other(small());
  play(other, 0, {{kInf, 4}});
  std::istringstream in2(saved(fresh));
  other.load_state(in2);
  EXPECT_EQ(snapshot(other), snapshot(fresh));
}

TEST(LossScaler, LoadRejectsBadStreamsAndLeavesTheScalerUnchanged) {
  const std::string bytes = saved(scripted());
  LossScaler s(small());
  play(s, 0, {{kInf, 4}});
  const std::string before = snapshot(s);

  for (std::size_t cut : {std::size_t{0}, std::size_t{5}, std::size_t{20}, bytes.size() - 3}) {
    std::istringstream in(bytes.substr(0, cut));
    EXPECT_THROW(s.load_state(in), std::runtime_error) << "cut at " << cut;
    EXPECT_EQ(snapshot(s), before);
  }

  std::string wrong_magic = bytes;
  wrong_magic[2] = 'X';
  std::istringstream in1(wrong_magic);
  EXPECT_THROW(s.load_state(in1), std::runtime_error);
  EXPECT_EQ(snapshot(s), before);

  std::istringstream garbage("not a loss scaler state stream");
  EXPECT_THROW(s.load_state(garbage), std::runtime_error);
  EXPECT_EQ(snapshot(s), before);

  // An event that does not exist in the last history entry (its last 4 bytes).
  std::string bad_event = bytes;
  bad_event[bad_event.size() - 4] = 9;
  std::istringstream in2(bad_event);
  EXPECT_THROW(s.load_state(in2), std::runtime_error);
  EXPECT_EQ(snapshot(s), before);

  // The intact stream loads.
  std::istringstream in3(bytes);
  s.load_state(in3);
  EXPECT_EQ(snapshot(s), snapshot(scripted()));
}

TEST(LossScaler, LoadRejectsAStreamFromOtherOptionsNamingTheOption) {
  const std::string bytes = saved(scripted());
  struct Case {
    LossScalerOptions options;
    const char* variable;
  };
  std::vector<Case> cases;
  LossScalerOptions o = small();
  o.growth_interval = 4;
  cases.push_back({o, "GRADWIRE_AMP_GROWTH_INTERVAL = 3, this run has 4"});
  o = small(16);
  cases.push_back({o, "GRADWIRE_AMP_INIT_SCALE = 8, this run has 16"});
  o = small();
  o.growth_factor = 4;
  cases.push_back({o, "GRADWIRE_AMP_GROWTH_FACTOR = 2, this run has 4"});
  o = small();
  o.backoff_factor = 0.25f;
  cases.push_back({o, "GRADWIRE_AMP_BACKOFF_FACTOR = 0.5, this run has 0.25"});
  o = small(8, 3, 2);
  cases.push_back({o, "GRADWIRE_AMP_MIN_SCALE = 1, this run has 2"});
  o = small();
  o.dynamic = false;
  cases.push_back({o, "GRADWIRE_AMP_DYNAMIC = true, this run has false"});
  for (const Case& c : cases) {
    LossScaler s(c.options);
    const std::string before = snapshot(s);
    std::istringstream in(bytes);
    try {
      s.load_state(in);
      ADD_FAILURE() << "loaded under " << c.variable;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(c.variable), std::string::npos) << e.what();
    }
    EXPECT_EQ(snapshot(s), before) << c.variable;
  }
}

}  // namespace
}  // namespace gw::amp
