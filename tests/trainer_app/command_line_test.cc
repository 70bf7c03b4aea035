// gradwire_train's command line: exit codes, finite numbers, and the options ranks must agree on.
#include "reference_trainer/app/command_line.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace gw::trainer {
namespace {

std::optional<TrainerOptions> parse(std::vector<std::string> args, int* code) {
  args.insert(args.begin(), "gradwire_train");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  auto options = parse_command_line(static_cast<int>(argv.size()), argv.data(), code);
  ::testing::internal::GetCapturedStdout();
  ::testing::internal::GetCapturedStderr();
  return options;
}

TEST(CommandLine, EveryBadCommandLineIsExitCodeTwoAndHelpIsZero) {
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"--model", "resnet"},
                                              {"--epochs", "0"},
                                              {"--no-such-flag"},
                                              {"--lr"},
                                              {"--lr", "nan"},
                                              {"--momentum", "nan"},
                                              {"--weight-decay", "inf"},
                                              {"--time-budget", "inf"},
                                              {"--time-budget", "-inf"},
                                              {"--nesterov", "--momentum", "0"}}) {
    int code = -1;
    EXPECT_FALSE(parse(bad, &code).has_value()) << bad[0];
    EXPECT_EQ(code, 2) << bad[0];
  }
  int code = -1;
  EXPECT_FALSE(parse({"--help"}, &code).has_value());
  EXPECT_EQ(code, 0);
  ASSERT_TRUE(parse({"--lr", "0.1", "--time-budget", "1e3"}, &code).has_value());
}

// Note [Options that must agree across ranks]: one line per option, and a change to any of them
// changes exactly its own line.
TEST(CommandLine, EachAgreedOptionHasItsOwnLine) {
  const std::vector<std::vector<std::string>> changes = {{"--model", "cnn"},
                                                         {"--optimizer", "adam"},
                                                         {"--epochs", "2"},
                                                         {"--batch-size", "16"},
                                                         {"--lr", "0.1"},
                                                         {"--momentum", "0.5"},
                                                         {"--nesterov"},
                                                         {"--weight-decay", "0.001"},
                                                         {"--seed", "7"},
                                                         {"--max-steps", "3"},
                                                         {"--eval-every", "5"},
                                                         {"--time-budget", "100"},
                                                         {"--train-subset", "1000"},
                                                         {"--test-subset", "500"}};
  int code = 0;
  const std::string base = agreed_options_canonical(*parse({}, &code));
  std::set<std::string> changed_keys;
  for (const auto& change : changes) {
    const std::string text = agreed_options_canonical(*parse(change, &code));
    ASSERT_NE(text, base) << change[0];
    // The one line that differs starts with the option's name.
    std::size_t differing = 0;
    std::size_t a = 0, b = 0;
    while (a < base.size() && b < text.size()) {
      const std::size_t ea = base.find('\n', a), eb = text.find('\n', b);
      const std::string la = base.substr(a, ea - a), lb = text.substr(b, eb - b);
      if (la != lb) {
        ++differing;
        EXPECT_EQ(lb.rfind(change[0] + "=", 0), 0u) << lb;
      }
      a = ea + 1;
      b = eb + 1;
    }
    EXPECT_EQ(differing, 1u) << change[0];
    changed_keys.insert(change[0]);
  }
  EXPECT_EQ(changed_keys.size(), changes.size());
  // Exact values: the shortest text that reads back as the same double.
  EXPECT_NE(base.find("--lr=0.05\n"), std::string::npos) << base;
  // Paths and display flags may differ across ranks.
  EXPECT_EQ(agreed_options_canonical(*parse(
                {"--report", "/tmp/x.json", "--no-progress", "--data-dir", "/elsewhere"}, &code)),
            base);
}

}  // namespace
}  // namespace gw::trainer
