// The communicator over every rank of the job, of the backend GRADWIRE_BACKEND asks for: the one
// factory that programs (the reference trainer, the benchmarks) make their world communicator with.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "kernels/device.h"
#include "plugin/comm/communicator.h"
#include "plugin/comm/hierarchical_communicator.h"
#include "plugin/comm/routed_communicator.h"
#include "plugin/config/config.h"

namespace gw {

// GRADWIRE_BACKEND.
enum class Backend { kAuto, kMpi, kNccl };
const char* to_string(Backend backend);
Backend parse_backend(std::string_view text);  // "auto", "mpi", "nccl"; else invalid_argument

// What the factory picked (never kAuto), the CUDA device an NCCL communicator runs on (-1 for
// MPI), and why, in words.
struct BackendChoice {
  Backend backend = Backend::kMpi;
  int cuda_device = -1;
  std::string reason;
  HierarchyChoice hierarchy;  // filled by make_world_communicator
};

// Note [Choosing the backend] (world_communicator.cc). `buffers` is where the caller's buffers
// (its flat gradient buffer) live: NCCL moves device memory only, so host buffers always get MPI.
// `cuda_device` is the device they are on; -1: the node-local rank's device (local rank i uses
// device i mod the node's device count). Collective over MPI_COMM_WORLD (MPI initialised); every
// rank decides alike. Throws config::ConfigError, the same on every rank, when the ranks asked for
// different backends, or for nccl where it cannot work (saying why: a build without NCCL, host
// buffers, no CUDA device on a rank, two ranks on one device).
BackendChoice choose_world_backend(const config::Config& config, Device buffers,
                                   int cuda_device = -1);

// The CUDA device this rank uses by default: its node-local rank modulo the devices it sees (-1
// when it sees none). Collective over MPI_COMM_WORLD (MPI initialised).
int default_cuda_device();

// A communicator over every rank of the job, of the backend choose_world_backend picks (MPI:
// make_mpi_world_communicator; NCCL: on a new CUDA stream on the chosen device, with the host
// buffers of control messages routed to MPI: make_routed_communicator, routed_communicator.h).
// Collective. `chosen`, when given, receives the choice.
std::unique_ptr<Communicator> make_world_communicator(const config::Config& config, Device buffers,
                                                      int cuda_device = -1,
                                                      BackendChoice* chosen = nullptr);

}  // namespace gw
