#include "plugin/comm/nccl/nccl_communicator.h"

#include <nccl.h>
#include <sched.h>

#include <numeric>
#include <string>
#include <utility>

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

void NcclCommunicator::check_device_buffer(const char* what, const void* p,
                                           std::size_t count) const {
  if (count == 0) return;
  const int device = kernels::cuda_device_of(p);
  if (device < 0) {
    throw CommError(std::string("NCCL ") + what + " on rank " + std::to_string(rank_) +
                    ": the buffer is host memory, and NCCL moves CUDA device memory only (the MPI "
                    "backend, GRADWIRE_BACKEND=mpi, carries host buffers)");
  }
  if (device != stream_.cuda_device()) {
    throw CommError(std::string("NCCL ") + what + " on rank " + std::to_string(rank_) +
                    ": the buffer is on CUDA device " + std::to_string(device) +
                    ", this communicator works on device " + std::to_string(stream_.cuda_device()));
  }
}

WorkHandle NcclCommunicator::finish(const char* what) {
  kernels::Event event;
  event.record(stream_);
  return std::make_unique<NcclWork>(what, rank_, comm_, std::move(event));
}

WorkHandle NcclCommunicator::allreduce_async(void* buffer, std::size_t count, DataType type,
                                             ReduceOp op, TrafficKind /*kind*/) {
  const ncclDataType_t nccl_data = nccl_type(type, "allreduce", rank_);
  const ncclRedOp_t nccl_reduce = nccl_op(op, rank_);
  check_device_buffer("allreduce", buffer, count);
  stream_.make_current();
  if (count > 0) {
    GW_NCCL_CHECK(
        ncclAllReduce(buffer, buffer, count, nccl_data, nccl_reduce, comm_, native(stream_)), rank_,
        comm_);
  }
  return finish("ncclAllReduce");
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
// place).
// The cost is a point-to-point connection to every peer, made by NCCL on first use.
WorkHandle NcclCommunicator::allgatherv_async(const void* send, std::size_t send_count, void* recv,
                                              std::vector<std::size_t> recv_counts, DataType type,
                                              TrafficKind /*kind*/) {
  const std::string here = "NCCL allgatherv on rank " + std::to_string(rank_);
  if (recv_counts.size() != static_cast<std::size_t>(size_)) {
    throw CommError(here + ": " + std::to_string(recv_counts.size()) + " receive counts for " +
                    std::to_string(size_) + " ranks");
  }
  if (recv_counts[static_cast<std::size_t>(rank_)] != send_count) {
    throw CommError(here + ": send count " + std::to_string(send_count) +
                    " differs from this rank's receive count " +
                    std::to_string(recv_counts[static_cast<std::size_t>(rank_)]));
  }
  const ncclDataType_t nccl_data = nccl_type(type, "allgatherv", rank_);
  const std::size_t total = std::accumulate(recv_counts.begin(), recv_counts.end(), std::size_t{0});
  check_device_buffer("allgatherv (send buffer)", send, send_count);
  check_device_buffer("allgatherv (receive buffer)", recv, total);
  const std::size_t element = size_of(type);
  auto* out = static_cast<unsigned char*>(recv);
  std::vector<std::size_t> offsets(recv_counts.size(), 0);
  for (std::size_t r = 1; r < recv_counts.size(); ++r) {
    offsets[r] = offsets[r - 1] + recv_counts[r - 1];
  }
  stream_.make_current();
  unsigned char* own = out + offsets[static_cast<std::size_t>(rank_)] * element;
  if (send_count > 0 && send != own) {
    kernels::copy_bytes(own, send, send_count * element, stream_);
  }
  GW_NCCL_CHECK(ncclGroupStart(), rank_, comm_);
  try {
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      const std::size_t from_r = recv_counts[static_cast<std::size_t>(r)];
      if (send_count > 0) {
        GW_NCCL_CHECK(ncclSend(send, send_count, nccl_data, r, comm_, native(stream_)), rank_,
                      comm_);
      }
      if (from_r > 0) {
        GW_NCCL_CHECK(ncclRecv(out + offsets[static_cast<std::size_t>(r)] * element, from_r,
                               nccl_data, r, comm_, native(stream_)),
                      rank_, comm_);
      }
    }
  } catch (...) {
    ncclGroupEnd();  // close the group, so that the communicator stays usable for the error path
    throw;
  }
  GW_NCCL_CHECK(ncclGroupEnd(), rank_, comm_);
  return finish("NCCL allgatherv (ncclSend/ncclRecv)");
}

// NCCL has no alltoallv either, so it is the grouped ncclSend/ncclRecv of
// Note [allgatherv over NCCL] with a different block for each peer: the zero-element ones are left
// out (a peer that expects nothing posts no receive), and this rank's block for itself is copied
// on the stream.
WorkHandle NcclCommunicator::alltoallv_async(const void* send, std::vector<std::size_t> send_counts,
                                             void* recv, std::vector<std::size_t> recv_counts,
                                             DataType type, TrafficKind /*kind*/) {
  const auto here = [this] { return "NCCL alltoallv on rank " + std::to_string(rank_) + ": "; };
  if (send_counts.size() != static_cast<std::size_t>(size_)) {
    throw CommError(here() + std::to_string(send_counts.size()) + " send counts for " +
                    std::to_string(size_) + " ranks");
  }
  if (recv_counts.size() != static_cast<std::size_t>(size_)) {
    throw CommError(here() + std::to_string(recv_counts.size()) + " receive counts for " +
                    std::to_string(size_) + " ranks");
  }
  const auto self = static_cast<std::size_t>(rank_);
  if (send_counts[self] != recv_counts[self]) {
    throw CommError(here() + "send count " + std::to_string(send_counts[self]) +
                    " to this rank differs from the receive count " +
                    std::to_string(recv_counts[self]) + " from this rank");
  }
  const ncclDataType_t nccl_data = nccl_type(type, "alltoallv", rank_);
  const std::size_t send_total =
      std::accumulate(send_counts.begin(), send_counts.end(), std::size_t{0});
  const std::size_t recv_total =
      std::accumulate(recv_counts.begin(), recv_counts.end(), std::size_t{0});
  check_device_buffer("alltoallv (send buffer)", send, send_total);
  check_device_buffer("alltoallv (receive buffer)", recv, recv_total);
  const std::size_t element = size_of(type);
  const auto* in = static_cast<const unsigned char*>(send);
  auto* out = static_cast<unsigned char*>(recv);
  std::vector<std::size_t> send_offsets(send_counts.size(), 0);
  std::vector<std::size_t> recv_offsets(recv_counts.size(), 0);
  for (std::size_t r = 1; r < send_counts.size(); ++r) {
    send_offsets[r] = send_offsets[r - 1] + send_counts[r - 1];
    recv_offsets[r] = recv_offsets[r - 1] + recv_counts[r - 1];
  }
  stream_.make_current();
  const unsigned char* own_in = in + send_offsets[self] * element;
  unsigned char* own_out = out + recv_offsets[self] * element;
  if (send_counts[self] > 0 && own_in != own_out) {
    kernels::copy_bytes(own_out, own_in, send_counts[self] * element, stream_);
  }
  GW_NCCL_CHECK(ncclGroupStart(), rank_, comm_);
  try {
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      const auto peer = static_cast<std::size_t>(r);
      if (send_counts[peer] > 0) {
        GW_NCCL_CHECK(ncclSend(in + send_offsets[peer] * element, send_counts[peer], nccl_data, r,
                               comm_, native(stream_)),
                      rank_, comm_);
      }
      if (recv_counts[peer] > 0) {
        GW_NCCL_CHECK(ncclRecv(out + recv_offsets[peer] * element, recv_counts[peer], nccl_data, r,
                               comm_, native(stream_)),
                      rank_, comm_);
      }
    }
  } catch (...) {
    ncclGroupEnd();  // close the group, so that the communicator stays usable for the error path
    throw;
  }
  GW_NCCL_CHECK(ncclGroupEnd(), rank_, comm_);
  return finish("NCCL alltoallv (ncclSend/ncclRecv)");
}

WorkHandle NcclCommunicator::broadcast_async(void* buffer, std::size_t count, DataType type,
                                             int root, TrafficKind /*kind*/) {
  if (root < 0 || root >= size_) {
    throw CommError("NCCL broadcast on rank " + std::to_string(rank_) + ": root " +
                    std::to_string(root) + " is not a rank of this " + std::to_string(size_) +
                    "-rank communicator");
  }
  const ncclDataType_t nccl_data = nccl_type(type, "broadcast", rank_);
  check_device_buffer("broadcast", buffer, count);
  stream_.make_current();
  if (count > 0) {
    GW_NCCL_CHECK(ncclBroadcast(buffer, buffer, count, nccl_data, root, comm_, native(stream_)),
                  rank_, comm_);
  }
  return finish("ncclBroadcast");
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
