// main() for the single-process GoogleTest binaries (gw_add_gtest): GoogleTest's own, except that
// a binary that tested nothing says so. When no test passed and none failed (every selected test
// called GTEST_SKIP, e.g. for want of a CUDA device, or none was selected) it exits 77, which CTest
// reports as skipped, never as passed. See Note "Skipped is not passed" in
// cmake/GradwireTesting.cmake.
#include <gtest/gtest.h>

#include <cstdio>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int result = RUN_ALL_TESTS();
  if (result != 0 || GTEST_FLAG_GET(list_tests)) return result;
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  if (unit.successful_test_count() == 0 && unit.failed_test_count() == 0) {
    std::printf(
        "[gradwire] no test of this binary passed (%d skipped, %d selected): exit 77, "
        "reported to CTest as skipped\n",
        unit.skipped_test_count(), unit.test_to_run_count());
    return 77;
  }
  return 0;
}
