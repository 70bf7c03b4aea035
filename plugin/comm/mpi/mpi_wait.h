// How a rank waits for an MPI collective to complete (GRADWIRE_MPI_WAIT, Note [Waiting for MPI] in
// mpi_wait.cc): the mode, settled alike on every rank, and the waits themselves.
#pragma once

#include <mpi.h>

#include <string>
#include <string_view>

#include "plugin/comm/communicator.h"
#include "plugin/comm/mpi/mpi_error.h"

namespace gw {

enum class MpiWait { kAuto, kBlock, kYield };
const char* to_string(MpiWait wait);
MpiWait parse_mpi_wait(std::string_view text);  // "auto", "block", "yield"; else invalid_argument

// How the ranks of a communicator wait (kBlock or kYield, never kAuto), and why, in words.
struct MpiWaitChoice {
  MpiWait mode = MpiWait::kBlock;
  std::string reason;
};

// Collective over `comm`: every rank must ask for the same `requested` (else config::ConfigError
// on every rank), and kAuto is resolved to the same kBlock or kYield on every rank.
MpiWaitChoice resolve_mpi_wait(MPI_Comm comm, int rank, MpiWait requested);

// Completes `request`, spinning in MPI_Wait or, with `yield`, polling with MPI_Test and a
// sched_yield() between polls. Returns MPI's code.
int wait_request(MPI_Request* request, bool yield);

// Starts a non-blocking collective (`start(&request)` returns MPI's code) and polls it to
// completion with a yield between polls; an error is a CommError naming `what` and the rank.
template <class Start>
void poll_collective(const char* what, int rank, Start start) {
  MPI_Request request = MPI_REQUEST_NULL;
  int rc = start(&request);
  if (rc == MPI_SUCCESS) rc = wait_request(&request, /*yield=*/true);
  if (rc != MPI_SUCCESS) throw_mpi_error(what, rank, rc);
}

// One non-blocking MPI operation: owns its request, waits for it as `yield` says, and waits for
// it when destroyed unwaited.
class MpiWork : public Work {
 public:
  MpiWork(std::string what, int rank, bool yield);
  ~MpiWork() override { complete_quietly(); }
  MpiWork(const MpiWork&) = delete;
  MpiWork& operator=(const MpiWork&) = delete;

  void wait() override;
  MPI_Request* request() { return &request_; }

 protected:
  // Completes the request if it is still running, ignoring its error: for destructors, which must
  // neither free what MPI still reads (a subclass's arrays) nor throw.
  void complete_quietly() noexcept;

 private:
  std::string what_;
  int rank_;
  bool yield_;
  MPI_Request request_ = MPI_REQUEST_NULL;
  std::string error_;
};

}  // namespace gw
