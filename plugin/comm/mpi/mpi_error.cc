#include "plugin/comm/mpi/mpi_error.h"

namespace gw {

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, static_cast<std::size_t>(len));
}

void throw_mpi_error(const std::string& what, int rank, int code) {
  throw CommError(what + " failed on rank " + std::to_string(rank) + ": " + mpi_error_text(code));
}

}  // namespace gw
