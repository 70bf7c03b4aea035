// Two communicators as one, each collective sent to the one that carries its buffers.
#pragma once

#include <memory>

#include "plugin/comm/communicator.h"

namespace gw {

// Note [Host buffers beside NCCL]
// NCCL moves device memory only, but a program on NCCL still agrees on options, sums a test
// accuracy and checks a payload's counts in host memory. The routed communicator sends a
// collective whose buffers are all on a CUDA device to `device` (NCCL) and any other (a host
// buffer among them, or none: a barrier) to `host` (MPI, whose stager also takes a mixed pair).
// A collective that names the stream its inputs are ready on goes by that stream: a CUDA stream's
// to `device`, the host's to `host`, and no pointer is asked about. Every rank routes the same
// collective alike, since where a program keeps a buffer is the same on every rank; each backend
// keeps its own order. rank() and size() must agree (checked: else std::invalid_argument).
std::unique_ptr<Communicator> make_routed_communicator(std::unique_ptr<Communicator> device,
                                                       std::unique_ptr<Communicator> host);

}  // namespace gw
