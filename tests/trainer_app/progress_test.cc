// The trainer's progress output (Note [Progress in terminals and logs]): a bar redrawn in place on
// a terminal; plain lines, no carriage returns nor escapes, every N seconds otherwise. The
// terminal test and the clock are injected, so no pty and no waiting.
#include "reference_trainer/app/progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace gw::trainer {
namespace {

// A FILE* whose bytes the test can read (POSIX open_memstream).
class CapturedFile {
 public:
  CapturedFile() : file_(open_memstream(&data_, &size_)) {}
  ~CapturedFile() {
    std::fclose(file_);
    std::free(data_);
  }
  CapturedFile(const CapturedFile&) = delete;
  CapturedFile& operator=(const CapturedFile&) = delete;
  std::FILE* file() { return file_; }
  std::string text() {
    std::fflush(file_);
    return std::string(data_, size_);
  }

 private:
  char* data_ = nullptr;
  std::size_t size_ = 0;
  std::FILE* file_;
};

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

TEST(ProgressOutput, OnATerminalTheBarRedrawsInPlace) {
  CapturedFile out;
  double now = 0;
  ProgressOutput progress(out.file(), true, 30, [&now] { return now; });
  for (std::size_t step = 1; step <= 10; ++step) {
    now += 0.2;  // past the bar's 0.1 s between redraws
    progress.update(1, 3, step, 10, 0.5);
  }
  progress.finish();
  const std::string text = out.text();
  EXPECT_EQ(count(text, "\repoch 1/3 ["), 10u) << text;
  EXPECT_NE(text.find("100.0%  step 10/10  loss 0.5000"), std::string::npos) << text;
  EXPECT_EQ(text.find('\n'), std::string::npos) << "a bar never starts a new line";
  EXPECT_EQ(text.find("progress:"), std::string::npos) << "no timed lines on a terminal";
  // finish() erases the bar's line, so that the next line starts clean.
  EXPECT_EQ(text.substr(text.size() - 4), "\r\033[K");
}

TEST(ProgressOutput, OnATerminalRedrawsAtMostTenTimesASecondButAlwaysAtTheEpochsEnd) {
  CapturedFile out;
  double now = 0;
  ProgressOutput progress(out.file(), true, 30, [&now] { return now; });
  for (std::size_t step = 1; step <= 100; ++step) {
    now += 0.001;
    progress.update(1, 1, step, 100, 0.5);
  }
  const std::string text = out.text();
  EXPECT_EQ(count(text, "\r"), 2u) << "the first step and the last";
  EXPECT_NE(text.find("step 100/100"), std::string::npos) << text;
}

TEST(ProgressOutput, ElsewhereAPlainLineEveryNSeconds) {
  CapturedFile out;
  double now = 100;  // any origin: "elapsed" counts from construction
  ProgressOutput progress(out.file(), false, 30, [&now] { return now; });
  for (std::size_t step = 1; step <= 100; ++step) {
    now += 1;  // one line at 30 s, 60 s and 90 s of the 100
    progress.update(2, 3, step, 468, 0.51234);
    if (step % 10 == 0) progress.finish();  // as the trainer does around evaluations
  }
  const std::string text = out.text();
  EXPECT_EQ(text,
            "progress: epoch 2/3 step 30/468 (6.4%) loss 0.5123 elapsed 30.0 s\n"
            "progress: epoch 2/3 step 60/468 (12.8%) loss 0.5123 elapsed 60.0 s\n"
            "progress: epoch 2/3 step 90/468 (19.2%) loss 0.5123 elapsed 90.0 s\n");
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_EQ(text.find('\033'), std::string::npos);
}

TEST(ProgressOutput, ElsewhereNoLineBeforeNSecondsNorEverWithZero) {
  for (const double every : {0.0, 30.0}) {
    CapturedFile out;
    double now = 0;
    ProgressOutput progress(out.file(), false, every, [&now] { return now; });
    for (std::size_t step = 1; step <= 29; ++step) {
      now += every == 0 ? 1000 : 1;
      progress.update(1, 1, step, 29, 0.5);
    }
    progress.finish();
    EXPECT_EQ(out.text(), "") << "every " << every;
  }
}

TEST(ProgressOutput, DisabledWritesNothing) {
  double now = 0;
  for (const bool terminal : {true, false}) {
    ProgressOutput progress(nullptr, terminal, 1, [&now] { return now; });
    now += 100;
    progress.update(1, 1, 1, 1, 0.5);  // would crash on a null FILE*
    progress.finish();
  }
}

}  // namespace
}  // namespace gw::trainer
