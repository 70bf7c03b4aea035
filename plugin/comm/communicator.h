// The Communicator interface: the only way gradwire talks to the network. One folder per backend
// (plugin/comm/mpi/: host or CUDA device buffers; plugin/comm/nccl/: device buffers only), made by
// make_world_communicator (world_communicator.h); CountingCommunicator decorates any of them with
// per-kind byte counters.
#pragma once

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace gw {

enum class DataType { kUInt8, kInt32, kInt64, kFloat16, kFloat32, kFloat64 };
std::size_t size_of(DataType type);
const char* to_string(DataType type);

enum class ReduceOp { kSum, kMax, kMin };

// What the bytes of a collective are for; every report splits traffic by these.
enum class TrafficKind { kGradient = 0, kParameter = 1, kControl = 2 };
inline constexpr int kNumTrafficKinds = 3;
const char* to_string(TrafficKind kind);

// A collective failed (or was called with arguments a backend cannot carry). The message names the
// operation and the rank.
class CommError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A handle on an asynchronous collective. wait() blocks until it completes and rethrows its error;
// calling it again returns at once (or rethrows again). Destroying a handle that was never waited
// for waits for it, so buffers are never released under a running operation.
class Work {
 public:
  virtual ~Work() = default;
  virtual void wait() = 0;
};
using WorkHandle = std::unique_ptr<Work>;

// Collectives over a fixed group of ranks. Every rank must call the same collectives in the same
// order with matching counts (as in MPI). Buffers must stay valid until the handle's wait()
// returns.
class Communicator;

// A communicator's two levels (Note [Hierarchical allreduce]): `local`, the ranks of this rank's
// node in world order; `cross`, the ranks with this rank's local rank, one per node in node order.
// world_rank[j * L + q] is the world rank of node j's local rank q (L = local->size()), for
// messages that name a sender. Collectives on a level are this communicator's: CountingCommunicator
// charges them to its own counters.
struct Levels {
  Communicator* local = nullptr;
  Communicator* cross = nullptr;
  std::vector<int> world_rank;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Which node each rank is on (entry r: rank r's node, numbered from 0) where this communicator
  // knows it, else empty. CountingCommunicator splits its byte counts into intra- and inter-node
  // with it (Note [What the counters count]).
  virtual std::vector<int> node_of_rank() const { return {}; }

  // This communicator's two levels where it has them (a HierarchicalCommunicator, or a decorator
  // of one), else null. The sparse exchange runs its split over them
  // (Note [Sparse allreduce over two levels], plugin/bucket_exchange.h).
  virtual const Levels* levels() { return nullptr; }

  // In place: buffer[i] = op over ranks of buffer[i].
  virtual WorkHandle allreduce_async(void* buffer, std::size_t count, DataType type, ReduceOp op,
                                     TrafficKind kind) = 0;

  // recv receives every rank's send block, in rank order; recv_counts[r] is rank r's send_count
  // (recv_counts.size() == size(), recv_counts[rank()] == send_count).
  virtual WorkHandle allgatherv_async(const void* send, std::size_t send_count, void* recv,
                                      std::vector<std::size_t> recv_counts, DataType type,
                                      TrafficKind kind) = 0;

  // send holds size() blocks back to back, block r (send_counts[r] elements) for rank r; recv
  // receives rank r's block for this rank at the offset sum(recv_counts[0..r)), recv_counts[r]
  // elements. send_counts.size() == recv_counts.size() == size(); recv_counts[r] must equal what
  // rank r sends here (the caller exchanges counts first, e.g. with an allgatherv of the counts).
  // send and recv must not overlap (MPI forbids aliased buffers; NCCL's sends and receives run
  // concurrently).
  virtual WorkHandle alltoallv_async(const void* send, std::vector<std::size_t> send_counts,
                                     void* recv, std::vector<std::size_t> recv_counts,
                                     DataType type, TrafficKind kind) = 0;

  // buffer on every rank receives root's buffer.
  virtual WorkHandle broadcast_async(void* buffer, std::size_t count, DataType type, int root,
                                     TrafficKind kind) = 0;

  virtual void barrier() = 0;

  // Blocking forms. By default the async form and wait(); a backend overrides them when its
  // blocking collectives are faster (OpenMPI's tuned blocking algorithms beat its non-blocking
  // ones on 1-64 MB: gradwire_bench_allreduce measures both).
  virtual void allreduce(void* buffer, std::size_t count, DataType type, ReduceOp op,
                         TrafficKind kind) {
    allreduce_async(buffer, count, type, op, kind)->wait();
  }
  virtual void allgatherv(const void* send, std::size_t send_count, void* recv,
                          std::vector<std::size_t> recv_counts, DataType type, TrafficKind kind) {
    allgatherv_async(send, send_count, recv, std::move(recv_counts), type, kind)->wait();
  }
  virtual void alltoallv(const void* send, std::vector<std::size_t> send_counts, void* recv,
                         std::vector<std::size_t> recv_counts, DataType type, TrafficKind kind) {
    alltoallv_async(send, std::move(send_counts), recv, std::move(recv_counts), type, kind)->wait();
  }
  virtual void broadcast(void* buffer, std::size_t count, DataType type, int root,
                         TrafficKind kind) {
    broadcast_async(buffer, count, type, root, kind)->wait();
  }
};

}  // namespace gw
