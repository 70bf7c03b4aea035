// A Communicator decorator that counts, per rank and per traffic kind, the bytes each collective
// sends and receives. Every traffic figure gradwire reports comes from here.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>

#include "plugin/comm/communicator.h"

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
struct TrafficCounters {
  struct Kind {
    std::uint64_t sent_bytes = 0;
    std::uint64_t received_bytes = 0;
    std::uint64_t calls = 0;
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

  WorkHandle allreduce_async(void* buffer, std::size_t count, DataType type, ReduceOp op,
                             TrafficKind kind) override;
  WorkHandle allgatherv_async(const void* send, std::size_t send_count, void* recv,
                              std::vector<std::size_t> recv_counts, DataType type,
                              TrafficKind kind) override;
  WorkHandle alltoallv_async(const void* send, std::vector<std::size_t> send_counts, void* recv,
                             std::vector<std::size_t> recv_counts, DataType type,
                             TrafficKind kind) override;
  WorkHandle broadcast_async(void* buffer, std::size_t count, DataType type, int root,
                             TrafficKind kind) override;
  void barrier() override { inner_->barrier(); }
  void allreduce(void* buffer, std::size_t count, DataType type, ReduceOp op,
                 TrafficKind kind) override;
  void allgatherv(const void* send, std::size_t send_count, void* recv,
                  std::vector<std::size_t> recv_counts, DataType type, TrafficKind kind) override;
  void alltoallv(const void* send, std::vector<std::size_t> send_counts, void* recv,
                 std::vector<std::size_t> recv_counts, DataType type, TrafficKind kind) override;
  void broadcast(void* buffer, std::size_t count, DataType type, int root,
                 TrafficKind kind) override;

  // A consistent snapshot of this rank's counters (safe to call from any thread).
  TrafficCounters counters() const;
  void reset();

  Communicator& inner() { return *inner_; }

  // The per-rank byte figures of Note [What the counters count], for one call.
  static std::uint64_t allreduce_bytes(std::size_t count, std::size_t element_size, int rank,
                                       int size);

 private:
  void record(TrafficKind kind, std::uint64_t sent, std::uint64_t received);
  struct Bytes {
    std::uint64_t sent, received;
  };
  Bytes allgatherv_bytes(const std::vector<std::size_t>& recv_counts, std::size_t send_count,
                         DataType type) const;
  Bytes alltoallv_bytes(const std::vector<std::size_t>& send_counts,
                        const std::vector<std::size_t>& recv_counts, DataType type) const;
  void record_broadcast(std::size_t count, DataType type, int root, TrafficKind kind);

  struct AtomicKind {
    std::atomic<std::uint64_t> sent{0}, received{0}, calls{0};
  };
  std::unique_ptr<Communicator> inner_;
  std::array<AtomicKind, kNumTrafficKinds> kinds_;
};

}  // namespace gw
