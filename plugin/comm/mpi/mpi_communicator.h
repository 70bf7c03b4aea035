// The MPI backend of Communicator: MPI collectives on a duplicated communicator whose errors are
// returned (MPI_ERRORS_RETURN) and rethrown as CommError (mpi_error.h). float16 all-reduces use
// gradwire's own MPI ops (half_ops.h); how a rank waits is GRADWIRE_MPI_WAIT (mpi_wait.h). Buffers
// are host memory: a StagingCommunicator over it carries CUDA device buffers
// (Note [Staging device buffers]).
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "plugin/comm/communicator.h"
#include "plugin/comm/mpi/half_ops.h"
#include "plugin/comm/mpi/mpi_wait.h"

namespace gw {

// MPI's int counts and displacements for one collective.
struct MpiLayout {
  int count = 0;  // allreduce, broadcast: the buffer's; allgatherv: this rank's send count
  std::vector<int> send_counts, send_displacements;  // alltoallv
  std::vector<int> recv_counts, recv_displacements;  // allgatherv, alltoallv
};

class MpiCommunicator : public Communicator {
 public:
  // Duplicates `comm`; the duplicate is freed on destruction, as are this communicator's float16
  // MPI ops. Wait for (or destroy) every Work it returned before destroying it. Collective over
  // `comm`: every rank must ask for the same `wait` (else config::ConfigError on every rank), and
  // kAuto is resolved to the same kBlock or kYield on every rank.
  explicit MpiCommunicator(MPI_Comm comm, MpiWait wait = MpiWait::kAuto);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  WorkHandle start(const Collective& c) override;
  // MPI's blocking collectives (the tuned algorithms), same checks and errors as start.
  void run(const Collective& c) override;
  void barrier() override;

  MPI_Comm handle() const { return comm_; }
  // Where the ranks are (find_node_groups), for node_of_rank(); one entry per rank.
  void set_node_of_rank(std::vector<int> nodes);
  std::vector<int> node_of_rank() const override { return node_of_rank_; }
  // How this communicator waits (kBlock or kYield, never kAuto), and why, in words.
  MpiWait wait_mode() const { return wait_; }
  const std::string& wait_reason() const { return wait_reason_; }

 private:
  MPI_Op mpi_op(DataType type, ReduceOp op) const;
  // The arguments checked (check_arguments, then MPI's limit of INT_MAX elements per count and
  // per total) and put in MPI's ints.
  MpiLayout layout(const Collective& c) const;
  // MPI's blocking collective for `c` when `request` is null, else its non-blocking one on
  // `request`; returns MPI's error code.
  int call(const Collective& c, const MpiLayout& layout, MPI_Request* request) const;

  HalfOps half_ops_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  MpiWait wait_ = MpiWait::kBlock;
  std::string wait_reason_;
  std::vector<int> node_of_rank_;
};

}  // namespace gw
