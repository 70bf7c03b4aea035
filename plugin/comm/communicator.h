// The Communicator interface: the only way gradwire talks to the network. One folder per backend
// (plugin/comm/mpi/: host buffers; plugin/comm/nccl/: device buffers only), made by
// make_world_communicator (world_communicator.h); decorators add to any of them: byte counters
// (CountingCommunicator), device buffers staged through host memory (StagingCommunicator), two
// levels (HierarchicalCommunicator) and routing by where the buffers are (routed_communicator.h).
#pragma once

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "plugin/comm/collective.h"

namespace gw {

// A handle on an asynchronous collective. wait() blocks until it completes and rethrows its error;
// calling it again returns at once (or rethrows again). Destroying a handle that was never waited
// for waits for it, so buffers are never released under a running operation.
class Work {
 public:
  virtual ~Work() = default;
  virtual void wait() = 0;
};
using WorkHandle = std::unique_ptr<Work>;

// A Work that has completed already: what a layer that ran its collective to the end before
// returning (staging, the two-level allreduce) hands back.
WorkHandle completed_work();

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
  // (Note [Sparse allreduce over two levels], plugin/exchange/two_level_split.h).
  virtual const Levels* levels() { return nullptr; }

  // Whether a collective given ready_on = `stream` is ordered on the device after the work
  // enqueued on that stream so far, and that stream's later work after the collective, with no
  // host synchronisation: the caller may then enqueue a bucket's encode, collectives and decode
  // on `stream` without waiting for it (Note [Collectives ordered on a stream],
  // plugin/exchange/bucket_exchange.h). False unless a backend promises it.
  virtual bool orders_on(const kernels::Stream& /*stream*/) const { return false; }

  // The collective `c` (Note [A collective described once]), started: the returned Work completes
  // it. An argument a backend cannot carry throws CommError here, before anything is sent.
  virtual WorkHandle start(const Collective& c) = 0;
  // The collective `c`, to its end. By default start(c) and wait(); a backend overrides it when
  // its blocking collectives are faster (OpenMPI's tuned blocking algorithms beat its non-blocking
  // ones on 1-64 MB: gradwire_bench_allreduce measures both), a decorator to pass it on.
  virtual void run(const Collective& c) { start(c)->wait(); }

  virtual void barrier() = 0;

  // Each collective by name, as Collective's factories describe it (collective.h): the _async
  // forms start it, the others run it.
  WorkHandle allreduce_async(void* buffer, std::size_t count, DataType type, ReduceOp op,
                             TrafficKind kind) {
    return start(Collective::allreduce(buffer, count, type, op, kind));
  }
  WorkHandle allgatherv_async(const void* send, std::size_t send_count, void* recv,
                              std::vector<std::size_t> recv_counts, DataType type,
                              TrafficKind kind) {
    return start(
        Collective::allgatherv(send, send_count, recv, std::move(recv_counts), type, kind));
  }
  WorkHandle alltoallv_async(const void* send, std::vector<std::size_t> send_counts, void* recv,
                             std::vector<std::size_t> recv_counts, DataType type,
                             TrafficKind kind) {
    return start(Collective::alltoallv(send, std::move(send_counts), recv, std::move(recv_counts),
                                       type, kind));
  }
  WorkHandle broadcast_async(void* buffer, std::size_t count, DataType type, int root,
                             TrafficKind kind) {
    return start(Collective::broadcast(buffer, count, type, root, kind));
  }
  void allreduce(void* buffer, std::size_t count, DataType type, ReduceOp op, TrafficKind kind) {
    run(Collective::allreduce(buffer, count, type, op, kind));
  }
  void allgatherv(const void* send, std::size_t send_count, void* recv,
                  std::vector<std::size_t> recv_counts, DataType type, TrafficKind kind) {
    run(Collective::allgatherv(send, send_count, recv, std::move(recv_counts), type, kind));
  }
  void alltoallv(const void* send, std::vector<std::size_t> send_counts, void* recv,
                 std::vector<std::size_t> recv_counts, DataType type, TrafficKind kind) {
    run(Collective::alltoallv(send, std::move(send_counts), recv, std::move(recv_counts), type,
                              kind));
  }
  void broadcast(void* buffer, std::size_t count, DataType type, int root, TrafficKind kind) {
    run(Collective::broadcast(buffer, count, type, root, kind));
  }
};

}  // namespace gw
