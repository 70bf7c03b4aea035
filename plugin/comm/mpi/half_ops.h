// The MPI ops that reduce float16 (Note [float16 all-reduce] in half_ops.cc): MPI has no binary16
// type, so DataType::kFloat16 travels as MPI_UINT16_T and is reduced by these.
#pragma once

#include <mpi.h>

#include "plugin/comm/collective.h"

namespace gw {

// The user-defined MPI ops that reduce IEEE binary16 moved as MPI_UINT16_T, one per ReduceOp.
// Owned like a communicator's duplicated MPI_Comm: made by create(), freed on destruction unless
// MPI is finalized (Note [float16 all-reduce]).
class HalfOps {
 public:
  HalfOps() = default;
  ~HalfOps();
  HalfOps(const HalfOps&) = delete;
  HalfOps& operator=(const HalfOps&) = delete;

  void create();  // MPI must be initialised; throws CommError
  MPI_Op get(ReduceOp op) const;

 private:
  MPI_Op sum_ = MPI_OP_NULL, max_ = MPI_OP_NULL, min_ = MPI_OP_NULL;
};

}  // namespace gw
