// main() for GoogleTest binaries that run under mpirun: every rank runs every test; only rank 0
// prints the per-test lines, and a failure on any rank fails the process on that rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include "plugin/comm/mpi/mpi_runtime.h"

int main(int argc, char** argv) {
  gw::MpiRuntime mpi(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int rc = RUN_ALL_TESTS();
  // A rank whose tests failed says so even when its printer is off.
  if (rc != 0 && rank != 0) fprintf(stderr, "rank %d: tests failed\n", rank);
  return rc;
}
