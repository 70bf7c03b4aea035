#include "plugin/comm/counting_communicator.h"

#include <numeric>

namespace gw {

std::uint64_t TrafficCounters::total_sent() const {
  std::uint64_t total = 0;
  for (const auto& k : kinds) total += k.sent_bytes;
  return total;
}

CountingCommunicator::CountingCommunicator(std::unique_ptr<Communicator> inner)
    : inner_(std::move(inner)) {
  if (!inner_) throw std::invalid_argument("CountingCommunicator needs a communicator to wrap");
}

std::uint64_t CountingCommunicator::allreduce_bytes(std::size_t count, std::size_t element_size,
                                                    int rank, int size) {
  if (size <= 1) return 0;
  const auto n = static_cast<std::uint64_t>(size);
  const auto r = static_cast<std::uint64_t>(rank);
  const std::uint64_t own_chunk = count / n + (r < count % n ? 1 : 0);
  // count + (n - 2) * own_chunk, written so that n == 2 needs no negative term.
  return (static_cast<std::uint64_t>(count) + (n - 2) * own_chunk) * element_size;
}

void CountingCommunicator::record(TrafficKind kind, std::uint64_t sent, std::uint64_t received) {
  auto& k = kinds_[static_cast<std::size_t>(kind)];
  k.sent.fetch_add(sent, std::memory_order_relaxed);
  k.received.fetch_add(received, std::memory_order_relaxed);
  k.calls.fetch_add(1, std::memory_order_relaxed);
}

WorkHandle CountingCommunicator::allreduce_async(void* buffer, std::size_t count, DataType type,
                                                 ReduceOp op, TrafficKind kind) {
  WorkHandle work = inner_->allreduce_async(buffer, count, type, op, kind);
  const std::uint64_t bytes = allreduce_bytes(count, size_of(type), rank(), size());
  record(kind, bytes, bytes);
  return work;
}

void CountingCommunicator::allreduce(void* buffer, std::size_t count, DataType type, ReduceOp op,
                                     TrafficKind kind) {
  inner_->allreduce(buffer, count, type, op, kind);
  const std::uint64_t bytes = allreduce_bytes(count, size_of(type), rank(), size());
  record(kind, bytes, bytes);
}

CountingCommunicator::Bytes CountingCommunicator::allgatherv_bytes(
    const std::vector<std::size_t>& recv_counts, std::size_t send_count, DataType type) const {
  const std::uint64_t total =
      std::accumulate(recv_counts.begin(), recv_counts.end(), std::uint64_t{0});
  const std::uint64_t element = size_of(type);
  const auto others = static_cast<std::uint64_t>(size() - 1);
  return {others * send_count * element, (total - send_count) * element};
}

CountingCommunicator::Bytes CountingCommunicator::alltoallv_bytes(
    const std::vector<std::size_t>& send_counts, const std::vector<std::size_t>& recv_counts,
    DataType type) const {
  // Skips index rank() rather than subtracting it, so that count vectors of the wrong size (which
  // the wrapped communicator then refuses, uncounted) are never indexed past their end.
  const auto self = static_cast<std::size_t>(rank());
  std::uint64_t sent = 0, received = 0;
  for (std::size_t r = 0; r < send_counts.size(); ++r) sent += r == self ? 0 : send_counts[r];
  for (std::size_t r = 0; r < recv_counts.size(); ++r) received += r == self ? 0 : recv_counts[r];
  const std::uint64_t element = size_of(type);
  return {sent * element, received * element};
}

void CountingCommunicator::record_broadcast(std::size_t count, DataType type, int root,
                                            TrafficKind kind) {
  const std::uint64_t bytes = static_cast<std::uint64_t>(count) * size_of(type);
  if (rank() == root) {
    record(kind, bytes * static_cast<std::uint64_t>(size() - 1), 0);
  } else {
    record(kind, 0, bytes);
  }
}

// Each operation is counted once the wrapped communicator has accepted it (an argument error
// throws before anything is sent, and is not counted).
WorkHandle CountingCommunicator::allgatherv_async(const void* send, std::size_t send_count,
                                                  void* recv, std::vector<std::size_t> recv_counts,
                                                  DataType type, TrafficKind kind) {
  const Bytes bytes = allgatherv_bytes(recv_counts, send_count, type);
  WorkHandle work =
      inner_->allgatherv_async(send, send_count, recv, std::move(recv_counts), type, kind);
  record(kind, bytes.sent, bytes.received);
  return work;
}

void CountingCommunicator::allgatherv(const void* send, std::size_t send_count, void* recv,
                                      std::vector<std::size_t> recv_counts, DataType type,
                                      TrafficKind kind) {
  const Bytes bytes = allgatherv_bytes(recv_counts, send_count, type);
  inner_->allgatherv(send, send_count, recv, std::move(recv_counts), type, kind);
  record(kind, bytes.sent, bytes.received);
}

WorkHandle CountingCommunicator::alltoallv_async(const void* send,
                                                 std::vector<std::size_t> send_counts, void* recv,
                                                 std::vector<std::size_t> recv_counts,
                                                 DataType type, TrafficKind kind) {
  const Bytes bytes = alltoallv_bytes(send_counts, recv_counts, type);
  WorkHandle work = inner_->alltoallv_async(send, std::move(send_counts), recv,
                                            std::move(recv_counts), type, kind);
  record(kind, bytes.sent, bytes.received);
  return work;
}

void CountingCommunicator::alltoallv(const void* send, std::vector<std::size_t> send_counts,
                                     void* recv, std::vector<std::size_t> recv_counts,
                                     DataType type, TrafficKind kind) {
  const Bytes bytes = alltoallv_bytes(send_counts, recv_counts, type);
  inner_->alltoallv(send, std::move(send_counts), recv, std::move(recv_counts), type, kind);
  record(kind, bytes.sent, bytes.received);
}

WorkHandle CountingCommunicator::broadcast_async(void* buffer, std::size_t count, DataType type,
                                                 int root, TrafficKind kind) {
  WorkHandle work = inner_->broadcast_async(buffer, count, type, root, kind);
  record_broadcast(count, type, root, kind);
  return work;
}

void CountingCommunicator::broadcast(void* buffer, std::size_t count, DataType type, int root,
                                     TrafficKind kind) {
  inner_->broadcast(buffer, count, type, root, kind);
  record_broadcast(count, type, root, kind);
}

TrafficCounters CountingCommunicator::counters() const {
  TrafficCounters out;
  for (std::size_t i = 0; i < kinds_.size(); ++i) {
    out.kinds[i].sent_bytes = kinds_[i].sent.load(std::memory_order_relaxed);
    out.kinds[i].received_bytes = kinds_[i].received.load(std::memory_order_relaxed);
    out.kinds[i].calls = kinds_[i].calls.load(std::memory_order_relaxed);
  }
  return out;
}

void CountingCommunicator::reset() {
  for (auto& k : kinds_) {
    k.sent.store(0);
    k.received.store(0);
    k.calls.store(0);
  }
}

}  // namespace gw
