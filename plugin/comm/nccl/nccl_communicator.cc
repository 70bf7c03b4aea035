#include "plugin/comm/nccl/nccl_communicator.h"

#include <nccl.h>
#include <sched.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "plugin/comm/nccl/make_nccl_communicator.h"

namespace gw {
namespace {

// "<call> failed on rank R: <NCCL's description> (<NCCL's last error, if it has one>)".
std::string nccl_failure(const std::string& what, int rank, ncclResult_t rc, ncclComm_t comm) {
  std::string text =
      what + " failed on rank " + std::to_string(rank) + ": " + ncclGetErrorString(rc);
  const char* detail = ncclGetLastError(comm);
  if (detail != nullptr && *detail != '\0') text += std::string(" (") + detail + ")";
  return text;
}

// Checks an NCCL call's result; the CommError names the call and the rank.
#define GW_NCCL_CHECK(call, rank, comm)                                 \
  do {                                                                  \
    const ncclResult_t gw_nccl_rc = (call);                             \
    if (gw_nccl_rc != ncclSuccess) {                                    \
      throw CommError(nccl_failure(#call, (rank), gw_nccl_rc, (comm))); \
    }                                                                   \
  } while (0)

ncclDataType_t nccl_type(DataType type, const char* what, int rank) {
  switch (type) {
    case DataType::kUInt8:
      return ncclUint8;
    case DataType::kInt32:
      return ncclInt32;
    case DataType::kInt64:
      return ncclInt64;
    case DataType::kFloat16:
      return ncclFloat16;
    case DataType::kFloat32:
      return ncclFloat32;
    case DataType::kFloat64:
      return ncclFloat64;
  }
  throw CommError(std::string("NCCL ") + what + " on rank " + std::to_string(rank) +
                  ": data type " + std::to_string(static_cast<int>(type)) +
                  " is not one NCCL carries (accepted: uint8, int32, int64, float16, float32, "
                  "float64)");
}

ncclRedOp_t nccl_op(ReduceOp op, int rank) {
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kMin:
      return ncclMin;
  }
  throw CommError("NCCL allreduce on rank " + std::to_string(rank) + ": reduce op " +
                  std::to_string(static_cast<int>(op)) + " is not one of: sum, max, min");
}

cudaStream_t native(const kernels::Stream& stream) {
  return static_cast<cudaStream_t>(stream.native());
}

// Note [NCCL work and its errors]
// NCCL enqueues a collective on the communicator's stream and returns; a failure then (a peer
// gone, a network error) is not a return code but the communicator's asynchronous error, and the
// stream never reaches the end of that collective. So a Work records an event after its operation,
// and wait() polls both: the event (complete: the operation finished) and ncclCommGetAsyncError
// (an error: a CommError naming the operation and the rank, instead of a wait that never ends),
// yielding the core between polls. The communicator's destructor aborts the NCCL communicator
// (ncclCommAbort) when it holds such an error, and destroys it otherwise. Operations run in call
// order on the one stream, so every rank's call order is NCCL's order, as the interface requires.
class NcclWork : public Work {
 public:
  NcclWork(std::string what, int rank, ncclComm_t comm, kernels::Event event)
      : what_(std::move(what)), rank_(rank), comm_(comm), event_(std::move(event)) {}
  ~NcclWork() override {
    try {
      wait();
    } catch (...) {
      // The error was the caller's to see through wait(); a destructor must not throw.
    }
  }

  void wait() override {
    if (!waited_) {
      waited_ = true;
      poll();
    }
    if (!error_.empty()) throw CommError(error_);
  }

 private:
  void poll() {
    try {
      for (;;) {
        ncclResult_t state = ncclSuccess;
        const ncclResult_t rc = ncclCommGetAsyncError(comm_, &state);
        if (rc != ncclSuccess) state = rc;
        if (state != ncclSuccess && state != ncclInProgress) {
          error_ = nccl_failure(what_, rank_, state, comm_);
          return;
        }
        if (event_.completed()) return;
        sched_yield();
      }
    } catch (const std::exception& e) {  // a CUDA error while polling the event
      error_ = what_ + " failed on rank " + std::to_string(rank_) + ": " + e.what();
    }
  }

  std::string what_;
  int rank_;
  ncclComm_t comm_;
  kernels::Event event_;
  bool waited_ = false;
  std::string error_;
};

}  // namespace

NcclCommunicator::NcclCommunicator(MPI_Comm comm, kernels::Stream stream)
    : stream_(std::move(stream)) {
  MPI_Comm_rank(comm, &rank_);
  MPI_Comm_size(comm, &size_);
  const std::string here = "NcclCommunicator on rank " + std::to_string(rank_);
  if (stream_.is_host()) {
    throw CommError(here +
                    ": needs a CUDA stream (NCCL runs its collectives on a device), got "
                    "the host");
  }
  // Rank 0's unique id, and whether it could make one, in one broadcast: a failure there ends every
  // rank's construction instead of leaving the others in ncclCommInitRank.
  struct Hello {
    ncclUniqueId id;
    int ok;
  } hello{};
  ncclResult_t id_rc = ncclSuccess;
  if (rank_ == 0) {
    id_rc = ncclGetUniqueId(&hello.id);
    hello.ok = id_rc == ncclSuccess ? 1 : 0;
  }
  if (MPI_Bcast(&hello, static_cast<int>(sizeof hello), MPI_BYTE, 0, comm) != MPI_SUCCESS) {
    throw CommError(here + ": MPI_Bcast of NCCL's unique id failed");
  }
  if (hello.ok == 0) {
    throw CommError(rank_ == 0 ? nccl_failure("ncclGetUniqueId", 0, id_rc, nullptr)
                               : here + ": rank 0 could not make NCCL's unique id");
  }
  barrier_word_ = kernels::Buffer<int>(1, stream_);  // before the communicator: nothing to undo
  kernels::fill_zero(barrier_word_.data(), sizeof(int), stream_);
  stream_.make_current();
  GW_NCCL_CHECK(ncclCommInitRank(&comm_, size_, hello.id, rank_), rank_, nullptr);
}

NcclCommunicator::~NcclCommunicator() {
  if (comm_ == nullptr) return;
  try {
    stream_.synchronize();
  } catch (...) {
    // A CUDA error here: the communicator is released below all the same.
  }
  ncclResult_t state = ncclSuccess;
  if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess || state != ncclSuccess) {
    ncclCommAbort(comm_);
  } else {
    ncclCommDestroy(comm_);
  }
}

void NcclCommunicator::check_device(const std::string& what, int device) const {
  if (device < 0) {
    throw CommError("NCCL " + what + " on rank " + std::to_string(rank_) +
                    ": the buffer is host memory, and NCCL moves CUDA device memory only (the MPI "
                    "backend, GRADWIRE_BACKEND=mpi, carries host buffers)");
  }
  if (device != stream_.cuda_device()) {
    throw CommError("NCCL " + what + " on rank " + std::to_string(rank_) +
                    ": the buffer is on CUDA device " + std::to_string(device) +
                    ", this communicator works on device " + std::to_string(stream_.cuda_device()));
  }
}

// Given the stream the inputs are ready on, the buffers are its memory and no pointer is asked
// about (Note [A collective described once]); otherwise each buffer that holds elements is.
void NcclCommunicator::check_buffers(const Collective& c) const {
  const std::string op = to_string(c.op);
  if (c.ready_on != nullptr) {
    check_device(op, c.ready_on->is_host() ? -1 : c.ready_on->cuda_device());
    return;
  }
  if (c.in_place()) {
    if (c.count > 0) check_device(op, kernels::cuda_device_of(c.recv));
    return;
  }
  if (c.elements_read(rank_) > 0) {
    check_device(op + " (send buffer)", kernels::cuda_device_of(c.send));
  }
  if (c.elements_written(rank_) > 0) {
    check_device(op + " (receive buffer)", kernels::cuda_device_of(c.recv));
  }
}

WorkHandle NcclCommunicator::finish(const char* what) {
  kernels::Event event;
  event.record(stream_);
  return std::make_unique<NcclWork>(what, rank_, comm_, std::move(event));
}

namespace {

// Where each peer's blocks are, for an allgatherv or an alltoallv: block r of `send` goes to rank
// r, and rank r's block for this rank lands at block r of `recv`. An allgatherv sends its one
// block to every rank.
struct PeerBlocks {
  std::vector<const unsigned char*> send;
  std::vector<std::size_t> send_counts;
  std::vector<unsigned char*> recv;
  std::vector<std::size_t> recv_counts;
};

PeerBlocks peer_blocks(const Collective& c, int size) {
  const auto n = static_cast<std::size_t>(size);
  const std::size_t element = size_of(c.type);
  PeerBlocks b;
  b.send_counts =
      c.op == CollectiveOp::kAllgatherv ? std::vector<std::size_t>(n, c.count) : c.send_counts;
  b.recv_counts = c.recv_counts;
  const auto* in = static_cast<const unsigned char*>(c.send);
  auto* out = static_cast<unsigned char*>(c.recv);
  std::size_t send_offset = 0, recv_offset = 0;
  for (std::size_t r = 0; r < n; ++r) {
    b.send.push_back(c.op == CollectiveOp::kAllgatherv ? in : in + send_offset * element);
    b.recv.push_back(out + recv_offset * element);
    send_offset += b.send_counts[r];
    recv_offset += b.recv_counts[r];
  }
  return b;
}

// Note [allgatherv over NCCL]
// NCCL has no allgatherv. Two ways to make one: ncclAllGather of blocks padded to the largest
// count (then a compaction), or each rank sending its block to every other rank with ncclSend and
// receiving theirs with ncclRecv, grouped (ncclGroupStart/End) so that NCCL schedules them as one
// operation. gradwire's allgatherv carries sparse top-k messages whose sizes differ across ranks,
// so padding would move (n x largest - total) elements for nothing, and the counters
// (Note [What the counters count]) charge exactly "send my block to the n-1 others, receive every
// other block", which is what the grouped point-to-point form moves. So: grouped ncclSend/ncclRecv,
// and this rank's own block copied into place on the same stream (unless send already is that
// place). NCCL has no alltoallv either, so it is the same exchange with a different block for
// each peer. Zero-element blocks are left out (a peer that expects nothing posts no receive).
// The cost is a point-to-point connection to every peer, made by NCCL on first use.
void exchange_blocks(const Collective& c, ncclDataType_t type, ncclComm_t comm,
                     const kernels::Stream& stream, int rank, int size) {
  const PeerBlocks b = peer_blocks(c, size);
  const auto self = static_cast<std::size_t>(rank);
  if (b.send_counts[self] > 0 && b.send[self] != b.recv[self]) {
    kernels::copy_bytes(b.recv[self], b.send[self], b.send_counts[self] * size_of(c.type), stream);
  }
  GW_NCCL_CHECK(ncclGroupStart(), rank, comm);
  try {
    for (int r = 0; r < size; ++r) {
      const auto peer = static_cast<std::size_t>(r);
      if (r == rank) continue;
      if (b.send_counts[peer] > 0) {
        GW_NCCL_CHECK(ncclSend(b.send[peer], b.send_counts[peer], type, r, comm, native(stream)),
                      rank, comm);
      }
      if (b.recv_counts[peer] > 0) {
        GW_NCCL_CHECK(ncclRecv(b.recv[peer], b.recv_counts[peer], type, r, comm, native(stream)),
                      rank, comm);
      }
    }
  } catch (...) {
    ncclGroupEnd();  // close the group, so that the communicator stays usable for the error path
    throw;
  }
  GW_NCCL_CHECK(ncclGroupEnd(), rank, comm);
}

}  // namespace

WorkHandle NcclCommunicator::start(const Collective& c) {
  check_arguments(c, rank_, size_, "NCCL ");
  const ncclDataType_t type = nccl_type(c.type, to_string(c.op), rank_);
  const ncclRedOp_t reduce = c.op == CollectiveOp::kAllreduce ? nccl_op(c.reduce, rank_) : ncclSum;
  check_buffers(c);
  stream_.make_current();
  // Inputs ready on another stream: NCCL's stream waits for that stream's work so far.
  if (c.ready_on != nullptr && *c.ready_on != stream_) {
    inputs_ready_.record(*c.ready_on);
    inputs_ready_.make_wait(stream_);
  }
  switch (c.op) {
    case CollectiveOp::kAllreduce:
      if (c.count > 0) {
        GW_NCCL_CHECK(ncclAllReduce(c.recv, c.recv, c.count, type, reduce, comm_, native(stream_)),
                      rank_, comm_);
      }
      return finish("ncclAllReduce");
    case CollectiveOp::kBroadcast:
      if (c.count > 0) {
        GW_NCCL_CHECK(ncclBroadcast(c.recv, c.recv, c.count, type, c.root, comm_, native(stream_)),
                      rank_, comm_);
      }
      return finish("ncclBroadcast");
    case CollectiveOp::kAllgatherv:
      exchange_blocks(c, type, comm_, stream_, rank_, size_);
      return finish("NCCL allgatherv (ncclSend/ncclRecv)");
    case CollectiveOp::kAlltoallv:
      exchange_blocks(c, type, comm_, stream_, rank_, size_);
      return finish("NCCL alltoallv (ncclSend/ncclRecv)");
  }
  throw std::logic_error("unknown CollectiveOp");
}

void NcclCommunicator::barrier() {
  stream_.make_current();
  GW_NCCL_CHECK(ncclAllReduce(barrier_word_.data(), barrier_word_.data(), 1, ncclInt32, ncclSum,
                              comm_, native(stream_)),
                rank_, comm_);
  finish("NCCL barrier (ncclAllReduce)")->wait();
}

bool nccl_built() { return true; }

std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm comm, const kernels::Stream& stream) {
  return std::make_unique<NcclCommunicator>(comm, stream);
}

}  // namespace gw
