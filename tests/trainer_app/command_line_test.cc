// gradwire_train's command line: exit codes, finite numbers, and the options ranks must agree on.
#include "reference_trainer/app/command_line.h"

#include <gtest/gtest.h>

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
                                              {"--progress-every", "-1"},
                                              {"--progress-every", "nan"},
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

// Note [Whole numbers read exactly]: no integer wraps or is clamped; an empty path is refused.
TEST(CommandLine, IntegersOutOfRangeAndEmptyPathsAreRefused) {
  int code = -1;
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"--seed", "-1"},
                                              {"--seed", "18446744073709551616"},
                                              {"--train-subset", "-5"},
                                              {"--test-subset", "1e3"},
                                              {"--max-steps", "12abc"},
                                              {"--batch-size", "-32"},
                                              {"--epochs", "99999999999"},
                                              {"--report", ""},
                                              {"--save-params", ""},
                                              {"--checkpoint", ""},
                                              {"--resume", ""},
                                              {"--data-dir", ""}}) {
    code = -1;
    EXPECT_FALSE(parse(bad, &code).has_value()) << bad[0] << " " << bad[1];
    EXPECT_EQ(code, 2) << bad[0] << " " << bad[1];
  }
  const auto largest = parse({"--seed", "18446744073709551615", "--max-steps", "7"}, &code);
  ASSERT_TRUE(largest.has_value());
  EXPECT_EQ(largest->seed, 18446744073709551615ULL);
  EXPECT_EQ(largest->schedule.max_steps, 7);
}

TEST(CommandLine, ProgressEveryTakesNonNegativeSeconds) {
  int code = -1;
  EXPECT_EQ(parse({}, &code)->output.progress_every, 30.0);
  EXPECT_EQ(parse({"--progress-every", "0.25"}, &code)->output.progress_every, 0.25);
  EXPECT_EQ(parse({"--progress-every", "0"}, &code)->output.progress_every, 0.0);
  const auto off = parse({"--no-progress", "--progress-every", "5"}, &code);
  ASSERT_TRUE(off.has_value());
  EXPECT_FALSE(off->output.progress);
  code = -1;
  EXPECT_FALSE(parse({"--progress-every", "-0.5"}, &code).has_value());
  EXPECT_EQ(code, 2);
}

// The one line in which `a` and `b` differ (they must have the same number of lines), or "" when
// they differ in no line or in more than one.
std::string the_differing_line(const std::string& a, const std::string& b) {
  std::string line;
  int differing = 0;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const std::size_t ei = a.find('\n', i), ej = b.find('\n', j);
    if (a.compare(i, ei - i, b, j, ej - j) != 0) {
      ++differing;
      line = b.substr(j, ej - j);
    }
    i = ei + 1;
    j = ej + 1;
  }
  return differing == 1 && i == a.size() && j == b.size() ? line : "";
}

// Note [Options that must agree across ranks]: one line per option, and a change to any of them
// changes exactly its own line.
TEST(CommandLine, EachAgreedOptionHasItsOwnLine) {
  struct Case {
    std::vector<std::string> base, changed;
    std::string option;
  };
  const std::vector<Case> cases = {{{}, {"--model", "cnn"}, "--model"},
                                   {{}, {"--optimizer", "adam"}, "--optimizer"},
                                   {{}, {"--epochs", "2"}, "--epochs"},
                                   {{}, {"--batch-size", "16"}, "--batch-size"},
                                   {{}, {"--lr", "0.1"}, "--lr"},
                                   {{}, {"--momentum", "0.5"}, "--momentum"},
                                   {{}, {"--nesterov"}, "--nesterov"},
                                   {{}, {"--weight-decay", "0.001"}, "--weight-decay"},
                                   {{}, {"--seed", "7"}, "--seed"},
                                   {{}, {"--max-steps", "3"}, "--max-steps"},
                                   {{}, {"--eval-every", "5"}, "--eval-every"},
                                   {{}, {"--time-budget", "100"}, "--time-budget"},
                                   {{}, {"--train-subset", "1000"}, "--train-subset"},
                                   {{}, {"--test-subset", "500"}, "--test-subset"},
                                   {{}, {"--checkpoint", "/tmp/c"}, "--checkpoint"},
                                   {{"--checkpoint", "/tmp/c"},
                                    {"--checkpoint", "/tmp/c", "--checkpoint-every", "5"},
                                    "--checkpoint-every"}};
  int code = 0;
  for (const Case& c : cases) {
    const std::string base = agreed_options_canonical(*parse(c.base, &code));
    const std::string changed = agreed_options_canonical(*parse(c.changed, &code));
    const std::string line = the_differing_line(base, changed);
    EXPECT_EQ(line.rfind(c.option + "=", 0), 0u) << c.option << ": '" << line << "'";
  }
  const std::string base = agreed_options_canonical(*parse({}, &code));
  // Exact values: the shortest text that reads back as the same double.
  EXPECT_NE(base.find("--lr=0.05\n"), std::string::npos) << base;
  // Paths and display flags may differ across ranks.
  EXPECT_EQ(agreed_options_canonical(*parse({"--report", "/tmp/x.json", "--no-progress",
                                             "--progress-every", "1", "--data-dir", "/elsewhere"},
                                            &code)),
            base);
  EXPECT_EQ(agreed_options_canonical(*parse({"--checkpoint", "/a/{rank}"}, &code)),
            agreed_options_canonical(*parse({"--checkpoint", "/b/c"}, &code)));
}

}  // namespace
}  // namespace gw::trainer
