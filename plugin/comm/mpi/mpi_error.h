// MPI's return codes as CommErrors that name the call and the rank: what every file of the MPI
// backend checks its calls with.
#pragma once

#include <mpi.h>

#include <string>

#include "plugin/comm/collective.h"

namespace gw {

// MPI's description of an error code.
std::string mpi_error_text(int code);

// Throws CommError "<what> failed on rank R: <MPI's description of code>".
[[noreturn]] void throw_mpi_error(const std::string& what, int rank, int code);

// Checks an MPI call's return code; the error names the call and the rank.
#define GW_MPI_CHECK(call, rank)                                                   \
  do {                                                                             \
    const int gw_mpi_rc = (call);                                                  \
    if (gw_mpi_rc != MPI_SUCCESS) ::gw::throw_mpi_error(#call, (rank), gw_mpi_rc); \
  } while (0)

}  // namespace gw
