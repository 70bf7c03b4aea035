#include "plugin/comm/collective.h"

#include <numeric>
#include <utility>

namespace gw {

std::size_t size_of(DataType type) {
  switch (type) {
    case DataType::kUInt8:
      return 1;
    case DataType::kInt32:
      return 4;
    case DataType::kInt64:
      return 8;
    case DataType::kFloat16:
      return 2;
    case DataType::kFloat32:
      return 4;
    case DataType::kFloat64:
      return 8;
  }
  throw std::logic_error("unknown DataType");
}

const char* to_string(DataType type) {
  switch (type) {
    case DataType::kUInt8:
      return "uint8";
    case DataType::kInt32:
      return "int32";
    case DataType::kInt64:
      return "int64";
    case DataType::kFloat16:
      return "float16";
    case DataType::kFloat32:
      return "float32";
    case DataType::kFloat64:
      return "float64";
  }
  return "?";
}

const char* to_string(TrafficKind kind) {
  switch (kind) {
    case TrafficKind::kGradient:
      return "gradient";
    case TrafficKind::kParameter:
      return "parameter";
    case TrafficKind::kControl:
      return "control";
  }
  return "?";
}

const char* to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllreduce:
      return "allreduce";
    case CollectiveOp::kAllgatherv:
      return "allgatherv";
    case CollectiveOp::kAlltoallv:
      return "alltoallv";
    case CollectiveOp::kBroadcast:
      return "broadcast";
  }
  return "?";
}

Collective Collective::allreduce(void* buffer, std::size_t count, DataType type, ReduceOp op,
                                 TrafficKind kind) {
  Collective c;
  c.op = CollectiveOp::kAllreduce;
  c.send = buffer;
  c.recv = buffer;
  c.count = count;
  c.type = type;
  c.reduce = op;
  c.kind = kind;
  return c;
}

Collective Collective::allgatherv(const void* send, std::size_t send_count, void* recv,
                                  std::vector<std::size_t> recv_counts, DataType type,
                                  TrafficKind kind) {
  Collective c;
  c.op = CollectiveOp::kAllgatherv;
  c.send = send;
  c.recv = recv;
  c.count = send_count;
  c.recv_counts = std::move(recv_counts);
  c.type = type;
  c.kind = kind;
  return c;
}

Collective Collective::alltoallv(const void* send, std::vector<std::size_t> send_counts, void* recv,
                                 std::vector<std::size_t> recv_counts, DataType type,
                                 TrafficKind kind) {
  Collective c;
  c.op = CollectiveOp::kAlltoallv;
  c.send = send;
  c.recv = recv;
  c.send_counts = std::move(send_counts);
  c.recv_counts = std::move(recv_counts);
  c.type = type;
  c.kind = kind;
  return c;
}

Collective Collective::broadcast(void* buffer, std::size_t count, DataType type, int root,
                                 TrafficKind kind) {
  Collective c;
  c.op = CollectiveOp::kBroadcast;
  c.send = buffer;
  c.recv = buffer;
  c.count = count;
  c.type = type;
  c.root = root;
  c.kind = kind;
  return c;
}

bool Collective::in_place() const {
  return op == CollectiveOp::kAllreduce || op == CollectiveOp::kBroadcast;
}

namespace {
std::size_t total(const std::vector<std::size_t>& counts) {
  return std::accumulate(counts.begin(), counts.end(), std::size_t{0});
}
}  // namespace

std::size_t Collective::elements_read(int rank) const {
  switch (op) {
    case CollectiveOp::kAllreduce:
    case CollectiveOp::kAllgatherv:
      return count;
    case CollectiveOp::kAlltoallv:
      return total(send_counts);
    case CollectiveOp::kBroadcast:
      return rank == root ? count : 0;
  }
  return 0;
}

std::size_t Collective::elements_written(int rank) const {
  switch (op) {
    case CollectiveOp::kAllreduce:
      return count;
    case CollectiveOp::kAllgatherv:
    case CollectiveOp::kAlltoallv:
      return total(recv_counts);
    case CollectiveOp::kBroadcast:
      return rank == root ? 0 : count;
  }
  return 0;
}

void check_arguments(const Collective& c, int rank, int size, std::string_view backend) {
  const auto fail = [&](const std::string& what) {
    throw CommError(std::string(backend) + to_string(c.op) + " on rank " + std::to_string(rank) +
                    ": " + what);
  };
  const auto ranks = static_cast<std::size_t>(size);
  const auto self = static_cast<std::size_t>(rank);
  switch (c.op) {
    case CollectiveOp::kAllreduce:
      return;
    case CollectiveOp::kBroadcast:
      if (c.root < 0 || c.root >= size) {
        fail("root " + std::to_string(c.root) + " is not a rank of this " + std::to_string(size) +
             "-rank communicator");
      }
      return;
    case CollectiveOp::kAllgatherv:
      if (c.recv_counts.size() != ranks) {
        fail(std::to_string(c.recv_counts.size()) + " receive counts for " + std::to_string(size) +
             " ranks");
      }
      if (c.recv_counts[self] != c.count) {
        fail("send count " + std::to_string(c.count) + " differs from this rank's receive count " +
             std::to_string(c.recv_counts[self]));
      }
      return;
    case CollectiveOp::kAlltoallv:
      if (c.send_counts.size() != ranks) {
        fail(std::to_string(c.send_counts.size()) + " send counts for " + std::to_string(size) +
             " ranks");
      }
      if (c.recv_counts.size() != ranks) {
        fail(std::to_string(c.recv_counts.size()) + " receive counts for " + std::to_string(size) +
             " ranks");
      }
      if (c.send_counts[self] != c.recv_counts[self]) {
        fail("send count " + std::to_string(c.send_counts[self]) +
             " to this rank differs from the receive count " + std::to_string(c.recv_counts[self]) +
             " from this rank");
      }
      return;
  }
}

}  // namespace gw
