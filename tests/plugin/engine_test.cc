// The engine thread and the timeline file, in one process (no MPI).
#include "plugin/engine.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "plugin/timeline.h"

namespace gw {
namespace {

TEST(Engine, RunsJobsOneAtATimeInLaunchOrderOffTheCallingThread) {
  std::vector<std::size_t> ran;
  std::atomic<int> running{0};
  std::atomic<int> most{0};
  std::atomic<int> off_thread{0};
  const auto caller = std::this_thread::get_id();
  Engine engine(
      [&](std::size_t b) {
        most = std::max(most.load(), ++running);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        ran.push_back(b);
        if (std::this_thread::get_id() != caller) ++off_thread;
        --running;
      },
      8);
  for (std::size_t b = 0; b < 8; ++b) engine.launch(b);
  // The caller returns from launch() at once and could go on with backward; the engine works.
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_FALSE(engine.wait().has_value());
  EXPECT_EQ(ran, (std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(most.load(), 1);
  EXPECT_GT(off_thread.load(), 0);
  // The next batch starts empty.
  ran.clear();
  engine.launch(3);
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
  for (std::size_t b = 0; b < 6; ++b) engine.launch(b);
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
  EXPECT_THROW(engine.launch(0), std::logic_error);
  EXPECT_TRUE(engine.wait().has_value());  // failed for good, no hang
}

TEST(Engine, RefusesMoreJobsThanItsCapacityAndDestroysWithWorkQueued) {
  std::atomic<int> started{0}, ran{0};
  {
    Engine engine(
        [&](std::size_t) {
          ++started;
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
          ++ran;
        },
        2);
    engine.launch(0);
    engine.launch(1);
    EXPECT_THROW(engine.launch(2), std::logic_error);
    while (started.load() == 0) std::this_thread::yield();
  }  // the destructor waits for the running job and drops the queued one
  EXPECT_EQ(ran.load(), 1);
}

std::string temp_path(const char* name) {
  return ::testing::TempDir() + "gw_engine_test_" + name;
}

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
    ASSERT_EQ(events.size(), 5u);               // process name, 2 x (thread name, sort index)
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

TEST(Timeline, AnUnwritablePathIsAnErrorNamingIt) {
  try {
    Timeline tl("/nonexistent-dir/trace.json", 0, {"steps"});
    ADD_FAILURE() << "opened an unwritable path";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("GRADWIRE_TIMELINE: cannot write "
                                         "'/nonexistent-dir/trace.rank0.json'"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace gw
