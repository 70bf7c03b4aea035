// gradwire: everything a training program needs, in one include.
//   #include <gradwire/gradwire.h>
#pragma once

#include "gradwire/config.h"
#include "plugin/comm/communicator.h"
#include "plugin/comm/counting_communicator.h"
#include "plugin/comm/mpi/mpi_runtime.h"
#include "plugin/config/config.h"
#include "plugin/config/params.h"
#include "plugin/distributed_optimizer.h"
#include "plugin/optimizer.h"
