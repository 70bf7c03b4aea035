// The MPI backend of Communicator: non-blocking MPI collectives on a duplicated communicator whose
// errors are returned (MPI_ERRORS_RETURN) and rethrown as CommError from Work::wait().
#pragma once

#include <mpi.h>

#include "plugin/comm/communicator.h"

namespace gw {

class MpiCommunicator : public Communicator {
 public:
  // Duplicates `comm`; the duplicate is freed on destruction.
  explicit MpiCommunicator(MPI_Comm comm);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  WorkHandle allreduce_async(void* buffer, std::size_t count, DataType type, ReduceOp op,
                             TrafficKind kind) override;
  WorkHandle allgatherv_async(const void* send, std::size_t send_count, void* recv,
                              std::vector<std::size_t> recv_counts, DataType type,
                              TrafficKind kind) override;
  WorkHandle broadcast_async(void* buffer, std::size_t count, DataType type, int root,
                             TrafficKind kind) override;
  void barrier() override;

  // Blocking MPI collectives (the tuned algorithms), same checks and errors as the async forms.
  void allreduce(void* buffer, std::size_t count, DataType type, ReduceOp op,
                 TrafficKind kind) override;
  void allgatherv(const void* send, std::size_t send_count, void* recv,
                  std::vector<std::size_t> recv_counts, DataType type, TrafficKind kind) override;
  void broadcast(void* buffer, std::size_t count, DataType type, int root,
                 TrafficKind kind) override;

  MPI_Comm handle() const { return comm_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace gw
