// The engine thread and the timeline file, in one process (no MPI).
#include "plugin/engine.h"

#include <gtest/gtest.h>

#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "plugin/config/registry.h"
#include "plugin/timeline.h"

namespace gw {
namespace {

// No assertion here needs a thread to be scheduled within some time: the sleeps only make
// overlapping jobs likely if the engine ever ran two at once, and the waits have no time limit.
TEST(Engine, RunsJobsOneAtATimeInLaunchOrderOffTheCallingThread) {
  std::vector<std::size_t> ran;
  std::atomic<int> running{0};
  std::atomic<int> most{0};
  std::atomic<int> started{0};
  std::atomic<bool> first_off_thread{false};
  const auto caller = std::this_thread::get_id();
  Engine engine(
      [&](std::size_t b) {
        most = std::max(most.load(), ++running);
        // Jobs run in launch order, so job 0 is the first; it says where it runs, then signals.
        if (b == 0) first_off_thread = std::this_thread::get_id() != caller;
        ++started;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        ran.push_back(b);
        --running;
      },
      8);
  for (std::size_t b = 0; b < 8; ++b) ASSERT_TRUE(engine.launch(b));
  // launch() returns at once and never runs a job itself (only wait() may), so a job that starts
  // before wait() is called runs on the engine thread, however long the machine takes to get to it.
  while (started.load() == 0) std::this_thread::yield();
  EXPECT_TRUE(first_off_thread.load());
  EXPECT_FALSE(engine.wait().has_value());
  EXPECT_EQ(ran, (std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(most.load(), 1);
  // The next batch starts empty.
  ran.clear();
  ASSERT_TRUE(engine.launch(3));
  EXPECT_FALSE(engine.wait().has_value());
  EXPECT_EQ(ran, (std::vector<std::size_t>{3}));
}

TEST(Engine, AThrowingJobDropsTheRestAndWaitReportsItsBucket) {
  std::vector<std::size_t> ran;
  Engine engine(
      [&](std::size_t b) {
        if (b == 2) throw std::runtime_error("boom");
        ran.push_back(b);
      },
      6);
  // Job 2 can fail before this thread has launched 3..5 (when it is kept off a core that long):
  // those launches then return false. Either way the failure is wait()'s to report.
  for (std::size_t b = 0; b < 3; ++b) ASSERT_TRUE(engine.launch(b));
  for (std::size_t b = 3; b < 6; ++b) (void)engine.launch(b);
  const auto failure = engine.wait();
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(failure->bucket, 2u);
  try {
    std::rethrow_exception(failure->error);
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "boom");
  }
  EXPECT_EQ(ran, (std::vector<std::size_t>{0, 1}));
  EXPECT_TRUE(engine.failed());
  EXPECT_FALSE(engine.launch(0));
  EXPECT_TRUE(engine.wait().has_value());  // failed for good, no hang
}

TEST(Engine, ALaunchAfterAFailureReturnsFalseAndQueuesNothing) {
  // The order the test above leaves to the scheduler, forced: the job fails, then a launch.
  std::atomic<int> ran{0};
  Engine engine(
      [&](std::size_t b) {
        if (b == 0) throw std::runtime_error("first");
        ++ran;
      },
      4);
  ASSERT_TRUE(engine.launch(0));
  while (!engine.failed()) std::this_thread::yield();
  EXPECT_FALSE(engine.launch(1));
  EXPECT_FALSE(engine.launch(2));
  const auto failure = engine.wait();
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(failure->bucket, 0u);
  EXPECT_EQ(ran.load(), 0);
}

TEST(Engine, RefusesMoreJobsThanItsCapacityAndDestroysWithWorkQueued) {
  std::atomic<int> started{0}, ran{0};
  {
    Engine* self = nullptr;
    Engine engine(
        [&](std::size_t) {
          ++started;
          // Held until the destructor has begun, so job 1 is still queued when it does, whatever
          // the scheduling.
          while (!self->stopping()) std::this_thread::yield();
          ++ran;
        },
        2);
    self = &engine;
    ASSERT_TRUE(engine.launch(0));
    ASSERT_TRUE(engine.launch(1));
    EXPECT_THROW((void)engine.launch(2), std::logic_error);
    while (started.load() == 0) std::this_thread::yield();
    EXPECT_FALSE(engine.stopping());
  }  // the destructor waits for the running job and drops the queued one
  EXPECT_EQ(started.load(), 1);
  EXPECT_EQ(ran.load(), 1);
}

std::string temp_path(const char* name) { return ::testing::TempDir() + "gw_engine_test_" + name; }

nlohmann::json parse_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

TEST(Timeline, RankPaths) {
  EXPECT_EQ(Timeline::rank_path("out/trace.json", 3), "out/trace.rank3.json");
  EXPECT_EQ(Timeline::rank_path("trace", 0), "trace.rank0.json");
  EXPECT_EQ(Timeline::rank_path("t-{rank}.trace", 12), "t-12.trace");
}

TEST(Timeline, TheFileIsCompleteJsonAfterEveryFlush) {
  const std::string base = temp_path("flush.json");
  const auto t0 = Timeline::Clock::now();
  {
    Timeline tl(base, 1, {"steps", "bucket 0: \"w\" .. b"});
    const std::string path = tl.path();
    EXPECT_EQ(path, temp_path("flush.rank1.json"));
    nlohmann::json events = parse_file(path);  // names only, already valid
    ASSERT_EQ(events.size(), 5u);              // process name, 2 x (thread name, sort index)
    EXPECT_EQ(events[3]["args"]["name"], "bucket 0: \"w\" .. b");  // escaped and read back
    tl.span(1, "encode", t0, t0 + std::chrono::microseconds(250), 7);
    tl.instant(0, "step 7", t0, 7);
    // Buffered until flush: the file still parses and lacks them.
    EXPECT_EQ(parse_file(path).size(), 5u);
    tl.flush();
    events = parse_file(path);
    ASSERT_EQ(events.size(), 7u);
    EXPECT_EQ(events[5]["name"], "encode");
    EXPECT_EQ(events[5]["ph"], "X");
    EXPECT_EQ(events[5]["pid"], 1);
    EXPECT_EQ(events[5]["tid"], 1);
    EXPECT_NEAR(events[5]["dur"].get<double>(), 250.0, 1e-3);
    EXPECT_EQ(events[5]["args"]["step"], 7);
    EXPECT_EQ(events[6]["ph"], "i");
    tl.span(1, "exchange", t0, t0, 8);
    tl.flush();
    EXPECT_EQ(parse_file(path).size(), 8u);
  }
  EXPECT_EQ(parse_file(temp_path("flush.rank1.json")).size(), 8u);
}

TEST(Timeline, AnUnwritablePathIsAConfigurationErrorNamingIt) {
  try {
    Timeline tl("/nonexistent-dir/trace.json", 0, {"steps"});
    ADD_FAILURE() << "opened an unwritable path";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("GRADWIRE_TIMELINE: cannot write "
                                         "'/nonexistent-dir/trace.rank0.json'"),
              std::string::npos)
        << e.what();
  }
}

// Note [Timeline stays valid JSON]: a write that fails part-way (here the file size limit, as on
// a full disk) leaves the file as it was after the last good flush.
TEST(Timeline, AFailedWriteLeavesValidJsonWithEveryEarlierStep) {
  struct rlimit saved {};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // a write past the limit fails instead
  const std::string path = temp_path("full.json");
  std::size_t events_before = 0;
  {
    Timeline tl(path, 0, {"steps"});
    const auto t0 = Timeline::Clock::now();
    for (int step = 0; step < 3; ++step) tl.span(0, "step", t0, t0, step);
    tl.flush();
    events_before = parse_file(tl.path()).size();
    std::ifstream in(tl.path(), std::ios::binary | std::ios::ate);
    const auto size = static_cast<rlim_t>(in.tellg());
    struct rlimit cap = saved;
    cap.rlim_cur = size + 100;  // room for part of the next batch, not all of it
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &cap), 0);
    for (int step = 3; step < 50; ++step) tl.span(0, "step", t0, t0, step);
    try {
      tl.flush();
      ADD_FAILURE() << "a write past the file size limit did not fail";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("GRADWIRE_TIMELINE: write error on '" + tl.path() +
                                           "': File too large; the file keeps every step"),
                std::string::npos)
          << e.what();
    }
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &saved), 0);
    const nlohmann::json after = parse_file(tl.path());
    EXPECT_EQ(after.size(), events_before);
    EXPECT_EQ(after.back()["args"]["step"], 2);
    // The timeline goes on after the failure: the next step is appended after the earlier ones.
    tl.span(0, "step", t0, t0, 50);
    tl.flush();
    EXPECT_EQ(parse_file(tl.path()).size(), events_before + 1);
  }
  setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, old_handler);
}

}  // namespace
}  // namespace gw
