// main() for GoogleTest binaries that run under mpirun: every rank runs every test. Rank 0 prints
// GoogleTest's usual output to stdout; every other rank keeps quiet about passing tests but
// prints each failed assertion (file:line and message) and each failed test to stderr, every line
// prefixed with "[rank R] ", so a failure on any rank is readable in the log. (stderr, because the
// launcher forwards each stream by the chunk: on one stream, a rank's block can land inside a line
// of rank 0, whose printer writes a line in pieces.) A failure on any rank fails the process on
// that rank, and so the job. A run where every test skipped exits 77 (CTest: skipped).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <sstream>
#include <string>

#include "plugin/comm/mpi/mpi_runtime.h"

namespace {

// Prints one block of text to stderr with every line prefixed, in one write, so that the blocks of
// several ranks interleave whole when the launcher merges their output.
void print_prefixed(int rank, const std::string& text) {
  const std::string prefix = "[rank " + std::to_string(rank) + "] ";
  std::string out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) out += prefix + line + "\n";
  std::fwrite(out.data(), 1, out.size(), stderr);
  std::fflush(stderr);
}

// The printer of ranks other than 0: failures only.
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}

  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::ostringstream text;
    if (result.file_name() != nullptr) {
      text << result.file_name();
      if (result.line_number() >= 0) text << ":" << result.line_number();
      text << ": ";
    }
    text << "Failure\n" << result.message();
    print_prefixed(rank_, text.str());
  }

  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (!info.result()->Failed()) return;
    print_prefixed(rank_,
                   std::string("[  FAILED  ] ") + info.test_suite_name() + "." + info.name());
  }

  void OnTestProgramEnd(const ::testing::UnitTest& unit) override {
    if (unit.Passed()) return;
    std::ostringstream text;
    text << unit.failed_test_count() << " FAILED TEST" << (unit.failed_test_count() == 1 ? "" : "S")
         << " on this rank:";
    for (int s = 0; s < unit.total_test_suite_count(); ++s) {
      const ::testing::TestSuite& suite = *unit.GetTestSuite(s);
      for (int t = 0; t < suite.total_test_count(); ++t) {
        const ::testing::TestInfo& info = *suite.GetTestInfo(t);
        if (info.result()->Failed()) text << "\n  " << suite.name() << "." << info.name();
      }
    }
    if (unit.ad_hoc_test_result().Failed()) text << "\n  (a failure outside any test)";
    print_prefixed(rank_, text.str());
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  gw::MpiRuntime mpi(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rank));  // owned by GoogleTest from here
  }
  const int result = RUN_ALL_TESTS();
  // As the single-process main does (Note "Skipped is not passed"): a run in which no test passed
  // and none failed (the GPU tests without a GPU) tested nothing. Every rank runs the same tests,
  // so every rank exits 77 together, after MPI_Finalize.
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  if (result == 0 && !GTEST_FLAG_GET(list_tests) && unit.successful_test_count() == 0 &&
      unit.failed_test_count() == 0) {
    if (rank == 0) {
      std::printf(
          "[gradwire] no test of this binary passed (%d skipped, %d selected): exit 77, "
          "reported to CTest as skipped\n",
          unit.skipped_test_count(), unit.test_to_run_count());
    }
    return 77;
  }
  return result;
}
