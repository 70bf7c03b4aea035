// A Communicator decorator that counts, per rank and per traffic kind, the bytes each collective
// sends and receives. Every traffic figure gradwire reports comes from here.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "plugin/comm/communicator.h"
#include "plugin/comm/hierarchical_communicator.h"

namespace gw {

// Note [What the counters count]
// A collective library does not say how many bytes its algorithm moved, so each call is charged
// what a bandwidth-optimal algorithm must move for it, per rank r of n, with the count split into
// n chunks c_0..c_{n-1} (c_i = count / n, plus one for i < count % n):
//   allreduce   reduce-scatter then allgather: r sends the other ranks' chunks of its input and
//               then its reduced chunk to each of them: sent = received = (count + (n-2) c_r) x
//               element size; 2(n-1)/n x bytes when n divides count, 0 when n == 1.
//   allgatherv  r sends its block to the n-1 others and receives every other block.
//   alltoallv   r sends block q to each rank q != r and receives each other rank's block for it.
//               As in allgatherv, r's own block never leaves the rank and is not counted.
//   broadcast   the root sends the buffer to each of the n-1 others; every other rank receives it.
//   barrier     nothing.
// These are the figures nccl-tests' bus bandwidth is based on, so bytes/time from these counters is
// comparable with busbw.
//
// Each figure is split into bytes that stay inside r's node and bytes that cross to another node
// (inter_node_*), by the nodes the wrapped communicator knows (node_of_rank(); where it knows none,
// every rank is a node of its own and every byte crosses). allgatherv, alltoallv and broadcast
// charge a block as crossing when its sender and receiver are on different nodes. A flat allreduce
// is charged as a ring in rank order (one of the algorithms Open MPI and MPICH pick for large
// buffers, and the one the low-bandwidth harness sets): all of r's bytes cross when the next rank
// is on another node, all of its received bytes when the previous one is, none otherwise; with a
// node's ranks next to each other, one rank per node sends across, 2(n-1)/n x bytes. The harness
// checks this against tc's counts on each host's link (docs/LOWBAND.md). A
// HierarchicalCommunicator's allreduce is charged stage by stage
// (Note [Hierarchical allreduce]): the node-local allreduce over the node's L ranks and the
// node-local allgather of the shards stay inside, the cross allreduce of r's shard over the N
// nodes crosses. Collectives on its levels (levels(): the sparse exchange's split over two levels)
// are charged to the same counters, as on a communicator whose ranks all share one node (local)
// or each have their own (cross).
struct TrafficCounters {
  struct Kind {
    std::uint64_t sent_bytes = 0;
    std::uint64_t received_bytes = 0;
    std::uint64_t calls = 0;
    std::uint64_t inter_node_sent_bytes = 0;  // of sent_bytes, those to another node
    std::uint64_t inter_node_received_bytes = 0;
  };
  std::array<Kind, kNumTrafficKinds> kinds{};

  const Kind& operator[](TrafficKind k) const { return kinds[static_cast<std::size_t>(k)]; }
  std::uint64_t total_sent() const;
};

class CountingCommunicator : public Communicator {
 public:
  explicit CountingCommunicator(std::unique_ptr<Communicator> inner);

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }

  // Each collective is counted once the wrapped communicator has accepted it (an argument error
  // throws before anything is sent, and is not counted).
  WorkHandle start(const Collective& c) override;
  void run(const Collective& c) override;
  void barrier() override {
    if (guard_count_.load() != 0) run_guards();
    inner_->barrier();
    last_barrier_end_.store(std::chrono::steady_clock::now().time_since_epoch().count());
  }
  std::vector<int> node_of_rank() const override { return inner_->node_of_rank(); }
  const Levels* levels() override { return local_ ? &levels_ : nullptr; }
  bool orders_on(const kernels::Stream& stream) const override { return inner_->orders_on(stream); }

  // A consistent snapshot of this rank's counters (safe to call from any thread).
  TrafficCounters counters() const;
  // When the last barrier returned, on the steady clock (the epoch before any): where a program
  // that synchronises its ranks before its first step starts that step's compute
  // (GRADWIRE_COMPRESSOR=auto's step 0). Only barriers: the collectives' hot path stays as it was.
  std::chrono::steady_clock::time_point last_barrier_end() const {
    return std::chrono::steady_clock::time_point(
        std::chrono::steady_clock::duration(last_barrier_end_.load()));
  }
  void reset();

  // A call made before each collective this communicator (not its levels) runs, on any thread,
  // while one is set: streaming diloco completes its exchange in flight on its engine thread
  // first, so that no two threads of the rank are inside MPI at once (Note [Streaming DiLoCo]).
  // One per owner; an empty function removes the owner's.
  void set_guard(const void* owner, std::function<void()> guard);

  Communicator& inner() { return *inner_; }

  // The per-rank byte figures of Note [What the counters count], for one call.
  static std::uint64_t allreduce_bytes(std::size_t count, std::size_t element_size, int rank,
                                       int size);

 private:
  struct Bytes {
    std::uint64_t sent = 0, received = 0, inter_sent = 0, inter_received = 0;
  };
  void record(TrafficKind kind, const Bytes& bytes);
  void run_guards();
  std::mutex guards_mutex_;
  std::vector<std::pair<const void*, std::function<void()>>> guards_;
  std::atomic<std::size_t> guard_count_{0};
  std::atomic<std::chrono::steady_clock::rep> last_barrier_end_{0};
  bool remote(std::size_t other) const;     // `other` is on another node than this rank
  Bytes charge(const Collective& c) const;  // Note [What the counters count], for one call
  Bytes allreduce_levels(std::size_t count, DataType type) const;
  Bytes allgatherv_bytes(const std::vector<std::size_t>& recv_counts, std::size_t send_count,
                         DataType type) const;
  Bytes alltoallv_bytes(const std::vector<std::size_t>& send_counts,
                        const std::vector<std::size_t>& recv_counts, DataType type) const;
  Bytes broadcast_bytes(std::size_t count, DataType type, int root) const;

  struct AtomicKind {
    std::atomic<std::uint64_t> sent{0}, received{0}, calls{0}, inter_sent{0}, inter_received{0};
  };
  using Tally = std::array<AtomicKind, kNumTrafficKinds>;
  // A level of another CountingCommunicator's inner communicator, counted into its tally; `nodes`
  // places the level's ranks (all on one node, or empty: each on its own).
  CountingCommunicator(Communicator& level, std::vector<int> nodes, std::shared_ptr<Tally> tally);

  std::unique_ptr<Communicator> owned_;  // null for a level
  Communicator* inner_;
  std::vector<int> nodes_;                               // inner_->node_of_rank()
  const HierarchicalCommunicator* two_levels_;           // inner_, where it is one
  std::shared_ptr<Tally> kinds_;                         // shared with the levels
  std::unique_ptr<CountingCommunicator> local_, cross_;  // inner_'s levels, counted; else null
  Levels levels_;
};

}  // namespace gw
