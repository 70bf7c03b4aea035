#include "plugin/comm/mpi/mpi_communicator.h"

#include <climits>
#include <string>
#include <utility>

#include "plugin/comm/mpi/mpi_runtime.h"

namespace gw {
namespace {

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, static_cast<std::size_t>(len));
}

// Checks an MPI call's return code; the error names the call and the rank.
#define GW_MPI_CHECK(call, rank)                                                              \
  do {                                                                                        \
    const int gw_mpi_rc = (call);                                                             \
    if (gw_mpi_rc != MPI_SUCCESS) {                                                           \
      throw CommError(std::string(#call) + " failed on rank " + std::to_string(rank) + ": " + \
                      mpi_error_text(gw_mpi_rc));                                             \
    }                                                                                         \
  } while (0)

MPI_Datatype mpi_type(DataType type) {
  switch (type) {
    case DataType::kUInt8:
      return MPI_UINT8_T;
    case DataType::kInt32:
      return MPI_INT32_T;
    case DataType::kInt64:
      return MPI_INT64_T;
    case DataType::kFloat16:
      return MPI_UINT16_T;  // moved as bits; see allreduce_async
    case DataType::kFloat32:
      return MPI_FLOAT;
    case DataType::kFloat64:
      return MPI_DOUBLE;
  }
  throw std::logic_error("unknown DataType");
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return MPI_SUM;
    case ReduceOp::kMax:
      return MPI_MAX;
    case ReduceOp::kMin:
      return MPI_MIN;
  }
  throw std::logic_error("unknown ReduceOp");
}

int to_mpi_count(std::size_t count, const char* what, int rank) {
  if (count > static_cast<std::size_t>(INT_MAX)) {
    throw CommError(std::string(what) + " on rank " + std::to_string(rank) + ": count " +
                    std::to_string(count) + " exceeds MPI's limit of " + std::to_string(INT_MAX) +
                    " elements per call");
  }
  return static_cast<int>(count);
}

// One non-blocking MPI collective. Owns the request, and the count/displacement arrays MPI reads
// until completion.
class MpiWork : public Work {
 public:
  MpiWork(std::string what, int rank) : what_(std::move(what)), rank_(rank) {}
  ~MpiWork() override {
    if (request_ != MPI_REQUEST_NULL) MPI_Wait(&request_, MPI_STATUS_IGNORE);
  }

  void wait() override {
    if (request_ != MPI_REQUEST_NULL) {
      const int rc = MPI_Wait(&request_, MPI_STATUS_IGNORE);
      request_ = MPI_REQUEST_NULL;
      if (rc != MPI_SUCCESS) {
        error_ = what_ + " failed on rank " + std::to_string(rank_) + ": " + mpi_error_text(rc);
      }
    }
    if (!error_.empty()) throw CommError(error_);
  }

  MPI_Request* request() { return &request_; }
  std::vector<int> counts;
  std::vector<int> displacements;

 private:
  std::string what_;
  int rank_;
  MPI_Request request_ = MPI_REQUEST_NULL;
  std::string error_;
};

}  // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm comm) {
  if (!MpiRuntime::initialized()) {
    throw CommError("MpiCommunicator: MPI is not initialised (create an MpiRuntime first)");
  }
  GW_MPI_CHECK(MPI_Comm_dup(comm, &comm_), -1);
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
}

namespace {

void check_allreduce_type(DataType type, int rank) {
  if (type == DataType::kFloat16) {
    throw CommError("allreduce of float16 is not supported by the MPI backend (rank " +
                    std::to_string(rank) + ")");
  }
}

// MPI's int counts and displacements for an allgatherv, after checking the arguments.
void allgatherv_layout(const std::vector<std::size_t>& recv_counts, std::size_t send_count,
                       int rank, int size, std::vector<int>* counts,
                       std::vector<int>* displacements) {
  if (recv_counts.size() != static_cast<std::size_t>(size)) {
    throw CommError("allgatherv on rank " + std::to_string(rank) + ": " +
                    std::to_string(recv_counts.size()) + " receive counts for " +
                    std::to_string(size) + " ranks");
  }
  if (recv_counts[static_cast<std::size_t>(rank)] != send_count) {
    throw CommError("allgatherv on rank " + std::to_string(rank) + ": send count " +
                    std::to_string(send_count) + " differs from this rank's receive count " +
                    std::to_string(recv_counts[static_cast<std::size_t>(rank)]));
  }
  counts->resize(recv_counts.size());
  displacements->resize(recv_counts.size());
  std::size_t offset = 0;
  for (std::size_t r = 0; r < recv_counts.size(); ++r) {
    (*counts)[r] = to_mpi_count(recv_counts[r], "allgatherv", rank);
    (*displacements)[r] = to_mpi_count(offset, "allgatherv (total)", rank);
    offset += recv_counts[r];
  }
  to_mpi_count(offset, "allgatherv (total)", rank);
}

void check_root(int root, int rank, int size) {
  if (root < 0 || root >= size) {
    throw CommError("broadcast on rank " + std::to_string(rank) + ": root " + std::to_string(root) +
                    " is not a rank of this " + std::to_string(size) + "-rank communicator");
  }
}

}  // namespace

WorkHandle MpiCommunicator::allreduce_async(void* buffer, std::size_t count, DataType type,
                                            ReduceOp op, TrafficKind /*kind*/) {
  check_allreduce_type(type, rank_);
  const int n = to_mpi_count(count, "allreduce", rank_);
  auto work = std::make_unique<MpiWork>("MPI_Iallreduce", rank_);
  if (n > 0) {
    GW_MPI_CHECK(
        MPI_Iallreduce(MPI_IN_PLACE, buffer, n, mpi_type(type), mpi_op(op), comm_, work->request()),
        rank_);
  } else {
    // Zero elements still synchronise like the collective would, keeping call order aligned.
    GW_MPI_CHECK(MPI_Ibarrier(comm_, work->request()), rank_);
  }
  return work;
}

void MpiCommunicator::allreduce(void* buffer, std::size_t count, DataType type, ReduceOp op,
                                TrafficKind /*kind*/) {
  check_allreduce_type(type, rank_);
  const int n = to_mpi_count(count, "allreduce", rank_);
  if (n > 0) {
    GW_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buffer, n, mpi_type(type), mpi_op(op), comm_), rank_);
  } else {
    GW_MPI_CHECK(MPI_Barrier(comm_), rank_);
  }
}

WorkHandle MpiCommunicator::allgatherv_async(const void* send, std::size_t send_count, void* recv,
                                             std::vector<std::size_t> recv_counts, DataType type,
                                             TrafficKind /*kind*/) {
  auto work = std::make_unique<MpiWork>("MPI_Iallgatherv", rank_);
  allgatherv_layout(recv_counts, send_count, rank_, size_, &work->counts, &work->displacements);
  GW_MPI_CHECK(
      MPI_Iallgatherv(send, static_cast<int>(send_count), mpi_type(type), recv, work->counts.data(),
                      work->displacements.data(), mpi_type(type), comm_, work->request()),
      rank_);
  return work;
}

void MpiCommunicator::allgatherv(const void* send, std::size_t send_count, void* recv,
                                 std::vector<std::size_t> recv_counts, DataType type,
                                 TrafficKind /*kind*/) {
  std::vector<int> counts, displacements;
  allgatherv_layout(recv_counts, send_count, rank_, size_, &counts, &displacements);
  GW_MPI_CHECK(MPI_Allgatherv(send, static_cast<int>(send_count), mpi_type(type), recv,
                              counts.data(), displacements.data(), mpi_type(type), comm_),
               rank_);
}

WorkHandle MpiCommunicator::broadcast_async(void* buffer, std::size_t count, DataType type,
                                            int root, TrafficKind /*kind*/) {
  check_root(root, rank_, size_);
  const int n = to_mpi_count(count, "broadcast", rank_);
  auto work = std::make_unique<MpiWork>("MPI_Ibcast", rank_);
  GW_MPI_CHECK(MPI_Ibcast(buffer, n, mpi_type(type), root, comm_, work->request()), rank_);
  return work;
}

void MpiCommunicator::broadcast(void* buffer, std::size_t count, DataType type, int root,
                                TrafficKind /*kind*/) {
  check_root(root, rank_, size_);
  const int n = to_mpi_count(count, "broadcast", rank_);
  GW_MPI_CHECK(MPI_Bcast(buffer, n, mpi_type(type), root, comm_), rank_);
}

void MpiCommunicator::barrier() { GW_MPI_CHECK(MPI_Barrier(comm_), rank_); }

}  // namespace gw
