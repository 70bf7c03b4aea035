// The leak canary of the ASan tree (See Note "Sanitizer trees", cmake/GradwireSanitizers.cmake).
// On every rank, while MPI runs, gradwire code leaks: a SparseMessageWriter from this program and
// the buffer that libgradwire's SparseMessageWriter::append grows inside it. LeakSanitizer must
// report both on every rank, although its suppressions (lsan.supp) hide Open MPI's own leaks;
// leak_canary.sh passes only then. A suppression that named gradwire, or leak checking switched
// off, would make this test fail.
#include <cstdint>
#include <cstdio>
#include <memory>

#include "compressors/sparse_message.h"
#include "plugin/comm/mpi/mpi_runtime.h"

int main(int argc, char** argv) {
  gw::MpiRuntime mpi(&argc, &argv);
  const auto world = gw::make_mpi_world_communicator();
  // A real collective first: the leaks happen on ranks that MPI has connected.
  float one = 1.0f;
  world->allreduce(&one, 1, gw::DataType::kFloat32, gw::ReduceOp::kSum, gw::TrafficKind::kControl);
  if (one != static_cast<float>(world->size())) {
    std::fprintf(stderr, "leak canary: the allreduce summed to %g, not %d\n", one, world->size());
    return 1;
  }

  auto writer = std::make_unique<gw::compressors::SparseMessageWriter>();
  const std::uint32_t indices[] = {0, 2};
  const float tensor[] = {1.0f, 2.0f, 3.0f};
  writer->append(indices, 2, tensor);
  // The deliberate leak: ownership is dropped, so nothing frees the writer or its buffer.
  static_cast<void>(writer.release());

  std::printf("leak canary: rank %d of %d leaked a SparseMessageWriter\n", world->rank(),
              world->size());
  std::fflush(stdout);
  return 0;
}
