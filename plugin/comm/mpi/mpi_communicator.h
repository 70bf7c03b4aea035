// The MPI backend of Communicator: MPI collectives on a duplicated communicator whose errors are
// returned (MPI_ERRORS_RETURN) and rethrown as CommError. float16 all-reduces use gradwire's own
// MPI ops (Note [float16 all-reduce] in mpi_communicator.cc). Buffers may be host or CUDA device
// memory: device buffers are staged through pinned host memory (Note [Staging device buffers]).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/stream.h"
#include "plugin/comm/communicator.h"

namespace gw {

// How a rank waits for a collective to complete: GRADWIRE_MPI_WAIT (Note [Waiting for MPI] in
// mpi_communicator.cc).
enum class MpiWait { kAuto, kBlock, kYield };
const char* to_string(MpiWait wait);
MpiWait parse_mpi_wait(std::string_view text);  // "auto", "block", "yield"; else invalid_argument

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
  // The user-defined MPI ops that reduce IEEE binary16 moved as MPI_UINT16_T, one per ReduceOp.
  // Owned like comm_: created by the constructor, freed on destruction unless MPI is finalized
  // (see Note [float16 all-reduce]).
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

  MPI_Op mpi_op(DataType type, ReduceOp op) const;
  // The arguments checked (check_arguments, then MPI's limit of INT_MAX elements per count and
  // per total) and put in MPI's ints.
  MpiLayout layout(const Collective& c) const;
  // MPI's blocking collective for `c` when `request` is null, else its non-blocking one on
  // `request`; returns MPI's error code.
  int call(const Collective& c, const MpiLayout& layout, MPI_Request* request) const;
  void resolve_wait(MpiWait requested);

  // Note [Staging device buffers] (mpi_communicator.cc).
  bool on_device(const void* p) const {
    return cuda_usable_ && kernels::device_of(p) == Device::kCuda;
  }
  const kernels::Stream& staging_stream(const void* device_buffer);
  bool staged(const Collective& c);  // false: no device buffer, nothing done
  void staged_allreduce(void* buffer, std::size_t count, DataType type, ReduceOp op,
                        TrafficKind kind);
  void staged_allgatherv(const void* send, std::size_t send_count, void* recv,
                         std::vector<std::size_t> recv_counts, DataType type, TrafficKind kind);
  void staged_alltoallv(const void* send, std::vector<std::size_t> send_counts, void* recv,
                        std::vector<std::size_t> recv_counts, DataType type, TrafficKind kind);
  void staged_broadcast(void* buffer, std::size_t count, DataType type, int root, TrafficKind kind);

  HalfOps half_ops_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  MpiWait wait_ = MpiWait::kBlock;
  std::string wait_reason_;
  // Staging: whether a CUDA device is usable here at all (asked once), the pinned host memory
  // and the stream the copies run on (made on first use, on the device buffers' device).
  bool cuda_usable_ = false;
  kernels::PinnedBuffer<unsigned char> staging_;
  kernels::Stream staging_stream_ = kernels::Stream::host();
  std::vector<int> node_of_rank_;
};

}  // namespace gw
