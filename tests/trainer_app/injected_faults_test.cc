// GW_TEST_FAULT's parsing and its non-fatal actions (Note [Faults the suite injects]); the fatal
// ones (kill, delay-kill) run in tests/integration/fault_matrix.sh.
#include "reference_trainer/app/injected_faults.h"

#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>

#include "plugin/config/registry.h"

namespace gw::trainer {
namespace {

using Action = InjectedFault::Action;

std::string refusal(const std::string& value, int world_size = 4) {
  try {
    parse_injected_faults(value, world_size);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(InjectedFaults, ParsesEveryPhaseAndAction) {
  const auto faults = parse_injected_faults(
      "3:6:commit:delay-kill=1,0:8:rotate:kill,1:9:step:throw,0:10:stage:full-disk,"
      "2:12:stage:delay=0.25,1:1:room:delay=0.5",
      4);
  ASSERT_EQ(faults.size(), 6u);
  EXPECT_EQ(faults[0].rank, 3);
  EXPECT_EQ(faults[0].step, 6);
  EXPECT_EQ(faults[0].phase, FaultPhase::kCommit);
  EXPECT_EQ(faults[0].action, Action::kDelayKill);
  EXPECT_DOUBLE_EQ(faults[0].seconds, 1.0);
  EXPECT_EQ(faults[1].phase, FaultPhase::kRotate);
  EXPECT_EQ(faults[1].action, Action::kKill);
  EXPECT_EQ(faults[2].phase, FaultPhase::kStep);
  EXPECT_EQ(faults[2].action, Action::kThrow);
  EXPECT_EQ(faults[3].action, Action::kFullDisk);
  EXPECT_EQ(faults[4].action, Action::kDelay);
  EXPECT_DOUBLE_EQ(faults[4].seconds, 0.25);
  EXPECT_EQ(faults[4].text, "2:12:stage:delay=0.25");
  EXPECT_EQ(faults[5].phase, FaultPhase::kRoom);
  EXPECT_TRUE(parse_injected_faults("", 4).empty());
}

TEST(InjectedFaults, RefusesWhatIsNotOfTheForm) {
  const std::string accepted = "accepted: RANK:STEP:PHASE:ACTION";
  for (const char* bad :
       {"1:2:step", "1:2:step:kill:x", "x:2:step:kill", "-1:2:step:kill", "1:0:step:kill",
        "1:1234567890:step:kill", "1:2:later:kill", "1:2:step:explode", "1:2:step:delay",
        "1:2:step:delay=0", "1:2:step:delay=-1", "1:2:step:delay=601", "1:2:step:delay=1s",
        "1:2:step:delay=nan", "1:2:step:kill=3", "1:2:commit:full-disk", "1:2:step:kill,",
        ",1:2:step:kill"}) {
    const std::string why = refusal(bad);
    EXPECT_NE(why.find("GW_TEST_FAULT: '"), std::string::npos) << bad << ": " << why;
    EXPECT_NE(why.find(accepted), std::string::npos) << bad << ": " << why;
  }
  EXPECT_NE(refusal("4:2:step:kill").find("rank 4 is not below the world size 4"),
            std::string::npos);
  EXPECT_NE(refusal("1:2:commit:full-disk").find("full-disk is a fault of the stage phase"),
            std::string::npos);
}

TEST(InjectedFaults, ActsOnlyAtItsRankStepAndPhase) {
  const auto faults = parse_injected_faults("1:5:step:throw,0:6:stage:full-disk", 2);
  EXPECT_NO_THROW(inject_faults(faults, 0, 5, FaultPhase::kStep));   // another rank
  EXPECT_NO_THROW(inject_faults(faults, 1, 4, FaultPhase::kStep));   // another step
  EXPECT_NO_THROW(inject_faults(faults, 1, 5, FaultPhase::kStage));  // another phase
  try {
    inject_faults(faults, 1, 5, FaultPhase::kStep);
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "a fault injected by GW_TEST_FAULT '1:5:step:throw'");
  }
  try {
    inject_faults(faults, 0, 6, FaultPhase::kStage);
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos);
  }
}

TEST(InjectedFaults, DelayWaitsThenGoesOn) {
  const auto faults = parse_injected_faults("0:3:commit:delay=0.2", 1);
  const auto t0 = std::chrono::steady_clock::now();
  inject_faults(faults, 0, 3, FaultPhase::kCommit);
  EXPECT_GE(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.2);
}

}  // namespace
}  // namespace gw::trainer
