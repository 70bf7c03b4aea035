// One rank's engine fails in the middle of a run while its peers wait in that bucket's
// collective. The failing rank must get the exception from step() (naming rank, step and bucket)
// and end the job the way gradwire_train does (MPI_Abort), so no rank hangs. CTest checks the
// message (PASS_REGULAR_EXPRESSION) and the timeout.
#include <cstdio>
#include <exception>
#include <vector>

#include "plugin_test_util.h"

using gw::testing::NoUpdate;

int main(int argc, char** argv) {
  gw::MpiRuntime mpi(&argc, &argv);
  auto comm = std::make_shared<gw::CountingCommunicator>(gw::make_mpi_world_communicator());
  std::vector<std::vector<float>> values(8, std::vector<float>(1000, 1.0f));
  const std::vector<gw::ParameterSpec> specs = gw::testing::specs_of(values);
  // 8 buckets.
  gw::DistributedOptimizerOptions options =
      gw::testing::settings({{gw::config::keys::kFusionThresholdMb, "0"}});
  options.inject_engine_failure.step = 3;
  options.inject_engine_failure.bucket = 2;
  options.inject_engine_failure.rank = comm->size() - 1;
  gw::DistributedOptimizer opt(comm, std::make_unique<NoUpdate>(), specs, options);
  try {
    for (int step = 0; step < 10; ++step) {
      for (std::size_t i = values.size(); i-- > 0;) opt.gradient_ready(i);
      opt.step();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "caught on rank %d: %s\n", comm->rank(), e.what());
    std::fflush(stderr);
    gw::MpiRuntime::abort_job(3);
  }
  std::fprintf(stderr, "rank %d: no failure reached step()\n", comm->rank());
  return 1;
}
