// Helpers shared by the plugin's MPI tests.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "plugin/comm/mpi/mpi_runtime.h"
#include "plugin/config/params.h"
#include "plugin/distributed_optimizer.h"

namespace gw::testing {

using Settings = std::vector<std::pair<const char*, const char*>>;

// Options that ignore the process environment: log level warn, then `values` in order.
inline DistributedOptimizerOptions settings(const Settings& values) {
  DistributedOptimizerOptions o;
  o.read_environment = false;
  o.config.set(config::keys::kLogLevel, "warn");
  for (const auto& [k, v] : values) o.config.set(k, v);
  return o;
}

// The MPI world behind a byte-counting communicator.
inline std::shared_ptr<CountingCommunicator> world() {
  return std::make_shared<CountingCommunicator>(make_mpi_world_communicator());
}

}  // namespace gw::testing
