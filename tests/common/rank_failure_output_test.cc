// A test binary for the MPI test main itself, run by rank_failure_output.sh (never on its own: it
// fails by design). One test fails on rank 1 only, one passes on every rank; the script checks
// that the log shows rank 1's failure, and nothing of the passing test from ranks other than 0.
#include <gtest/gtest.h>
#include <mpi.h>

namespace {

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

TEST(RankOutput, PassesOnEveryRank) { EXPECT_GE(world_rank(), 0); }

TEST(RankOutput, FailsOnRankOneOnly) {
  const int rank = world_rank();
  EXPECT_NE(rank, 1) << "deliberate failure on rank " << rank;  // DELIBERATE_FAILURE_LINE
}

}  // namespace
