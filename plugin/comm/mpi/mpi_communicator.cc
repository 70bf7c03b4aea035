#include "plugin/comm/mpi/mpi_communicator.h"

#include <climits>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/stream.h"
#include "plugin/comm/mpi/mpi_runtime.h"

namespace gw {
namespace {

MPI_Datatype mpi_type(DataType type) {
  switch (type) {
    case DataType::kUInt8:
      return MPI_UINT8_T;
    case DataType::kInt32:
      return MPI_INT32_T;
    case DataType::kInt64:
      return MPI_INT64_T;
    case DataType::kFloat16:
      return MPI_UINT16_T;  // moved as bits; reduced by HalfOps (Note [float16 all-reduce])
    case DataType::kFloat32:
      return MPI_FLOAT;
    case DataType::kFloat64:
      return MPI_DOUBLE;
  }
  throw std::logic_error("unknown DataType");
}

MPI_Op builtin_op(ReduceOp op) {
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

// MPI's int counts and displacements for blocks laid back to back in rank order.
// `what` names a block's count in an error, `what_total` their sum.
void block_layout(const std::vector<std::size_t>& blocks, const char* what, const char* what_total,
                  int rank, std::vector<int>* counts, std::vector<int>* displacements) {
  counts->resize(blocks.size());
  displacements->resize(blocks.size());
  std::size_t offset = 0;
  for (std::size_t r = 0; r < blocks.size(); ++r) {
    (*counts)[r] = to_mpi_count(blocks[r], what, rank);
    (*displacements)[r] = to_mpi_count(offset, what_total, rank);
    offset += blocks[r];
  }
  to_mpi_count(offset, what_total, rank);
}

// MPI's call for each operation, blocking or not, as errors name it.
const char* mpi_call_name(CollectiveOp op, bool blocking) {
  switch (op) {
    case CollectiveOp::kAllreduce:
      return blocking ? "MPI_Allreduce" : "MPI_Iallreduce";
    case CollectiveOp::kAllgatherv:
      return blocking ? "MPI_Allgatherv" : "MPI_Iallgatherv";
    case CollectiveOp::kAlltoallv:
      return blocking ? "MPI_Alltoallv" : "MPI_Ialltoallv";
    case CollectiveOp::kBroadcast:
      return blocking ? "MPI_Bcast" : "MPI_Ibcast";
  }
  return "?";
}

// One non-blocking MPI collective: its request, and the layout MPI reads until completion.
class MpiCollectiveWork final : public MpiWork {
 public:
  MpiCollectiveWork(std::string what, int rank, bool yield, MpiLayout layout)
      : MpiWork(std::move(what), rank, yield), layout(std::move(layout)) {}
  ~MpiCollectiveWork() override { complete_quietly(); }  // before `layout` is freed
  const MpiLayout layout;
};

}  // namespace

MPI_Op MpiCommunicator::mpi_op(DataType type, ReduceOp op) const {
  return type == DataType::kFloat16 ? half_ops_.get(op) : builtin_op(op);
}

MpiCommunicator::MpiCommunicator(MPI_Comm comm, MpiWait wait) {
  if (!MpiRuntime::initialized()) {
    throw CommError("MpiCommunicator: MPI is not initialised (create an MpiRuntime first)");
  }
  // Before the duplicate: if either throws, the ops made so far are freed by half_ops_.
  half_ops_.create();
  GW_MPI_CHECK(MPI_Comm_dup(comm, &comm_), -1);
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  try {
    const MpiWaitChoice choice = resolve_mpi_wait(comm_, rank_, wait);
    wait_ = choice.mode;
    wait_reason_ = choice.reason;
  } catch (...) {
    MPI_Comm_free(&comm_);  // the destructor does not run for a constructor that throws
    throw;
  }
}

void MpiCommunicator::set_node_of_rank(std::vector<int> nodes) {
  if (static_cast<int>(nodes.size()) != size_) {
    throw std::invalid_argument(
        "MpiCommunicator::set_node_of_rank: " + std::to_string(nodes.size()) + " entries for " +
        std::to_string(size_) + " ranks");
  }
  node_of_rank_ = std::move(nodes);
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
}

MpiLayout MpiCommunicator::layout(const Collective& c) const {
  check_arguments(c, rank_, size_);
  if (c.ready_on != nullptr && !c.ready_on->is_host()) {
    throw CommError(std::string(to_string(c.op)) + " on rank " + std::to_string(rank_) +
                    ": the buffers are on a CUDA stream, and MpiCommunicator moves host memory "
                    "only (a StagingCommunicator over it carries device buffers; "
                    "make_mpi_world_communicator puts one there where CUDA is usable)");
  }
  MpiLayout l;
  const char* what = to_string(c.op);
  switch (c.op) {
    case CollectiveOp::kAllreduce:
    case CollectiveOp::kBroadcast:
      l.count = to_mpi_count(c.count, what, rank_);
      break;
    case CollectiveOp::kAllgatherv:
      l.count = to_mpi_count(c.count, what, rank_);
      block_layout(c.recv_counts, "allgatherv", "allgatherv (total)", rank_, &l.recv_counts,
                   &l.recv_displacements);
      break;
    case CollectiveOp::kAlltoallv:
      block_layout(c.send_counts, "alltoallv (send)", "alltoallv (send total)", rank_,
                   &l.send_counts, &l.send_displacements);
      block_layout(c.recv_counts, "alltoallv (receive)", "alltoallv (receive total)", rank_,
                   &l.recv_counts, &l.recv_displacements);
      break;
  }
  return l;
}

int MpiCommunicator::call(const Collective& c, const MpiLayout& l, MPI_Request* request) const {
  const MPI_Datatype t = mpi_type(c.type);
  const bool blocking = request == nullptr;
  switch (c.op) {
    case CollectiveOp::kAllreduce: {
      // Zero elements still synchronise like the collective would, keeping call order aligned.
      if (l.count == 0) return blocking ? MPI_Barrier(comm_) : MPI_Ibarrier(comm_, request);
      const MPI_Op op = mpi_op(c.type, c.reduce);
      return blocking ? MPI_Allreduce(MPI_IN_PLACE, c.recv, l.count, t, op, comm_)
                      : MPI_Iallreduce(MPI_IN_PLACE, c.recv, l.count, t, op, comm_, request);
    }
    case CollectiveOp::kAllgatherv:
      return blocking ? MPI_Allgatherv(c.send, l.count, t, c.recv, l.recv_counts.data(),
                                       l.recv_displacements.data(), t, comm_)
                      : MPI_Iallgatherv(c.send, l.count, t, c.recv, l.recv_counts.data(),
                                        l.recv_displacements.data(), t, comm_, request);
    case CollectiveOp::kAlltoallv:
      return blocking ? MPI_Alltoallv(c.send, l.send_counts.data(), l.send_displacements.data(), t,
                                      c.recv, l.recv_counts.data(), l.recv_displacements.data(), t,
                                      comm_)
                      : MPI_Ialltoallv(c.send, l.send_counts.data(), l.send_displacements.data(), t,
                                       c.recv, l.recv_counts.data(), l.recv_displacements.data(), t,
                                       comm_, request);
    case CollectiveOp::kBroadcast:
      return blocking ? MPI_Bcast(c.recv, l.count, t, c.root, comm_)
                      : MPI_Ibcast(c.recv, l.count, t, c.root, comm_, request);
  }
  throw std::logic_error("unknown CollectiveOp");
}

WorkHandle MpiCommunicator::start(const Collective& c) {
  const char* what = mpi_call_name(c.op, /*blocking=*/false);
  auto work = std::make_unique<MpiCollectiveWork>(what, rank_, wait_ == MpiWait::kYield, layout(c));
  const int rc = call(c, work->layout, work->request());
  if (rc != MPI_SUCCESS) throw_mpi_error(what, rank_, rc);
  return work;
}

void MpiCommunicator::run(const Collective& c) {
  const MpiLayout l = layout(c);
  if (wait_ == MpiWait::kYield) {
    poll_collective(mpi_call_name(c.op, /*blocking=*/false), rank_,
                    [&](MPI_Request* request) { return call(c, l, request); });
    return;
  }
  const int rc = call(c, l, nullptr);
  if (rc != MPI_SUCCESS) throw_mpi_error(mpi_call_name(c.op, /*blocking=*/true), rank_, rc);
}

void MpiCommunicator::barrier() {
  if (wait_ == MpiWait::kYield) {
    poll_collective("MPI_Ibarrier", rank_,
                    [&](MPI_Request* request) { return MPI_Ibarrier(comm_, request); });
    return;
  }
  GW_MPI_CHECK(MPI_Barrier(comm_), rank_);
}

}  // namespace gw
