#include "plugin/comm/counting_communicator.h"

#include <stdexcept>
#include <string>

namespace gw {

std::uint64_t TrafficCounters::total_sent() const {
  std::uint64_t total = 0;
  for (const auto& k : kinds) total += k.sent_bytes;
  return total;
}

CountingCommunicator::CountingCommunicator(std::unique_ptr<Communicator> inner)
    : owned_(std::move(inner)), inner_(owned_.get()), kinds_(std::make_shared<Tally>()) {
  if (!inner_) throw std::invalid_argument("CountingCommunicator needs a communicator to wrap");
  nodes_ = inner_->node_of_rank();
  if (!nodes_.empty() && static_cast<int>(nodes_.size()) != inner_->size()) {
    throw std::invalid_argument("CountingCommunicator: the communicator places " +
                                std::to_string(nodes_.size()) + " ranks on nodes, but has " +
                                std::to_string(inner_->size()));
  }
  two_levels_ = dynamic_cast<const HierarchicalCommunicator*>(inner_);
  if (const Levels* levels = inner_->levels()) {
    const auto local_size = static_cast<std::size_t>(levels->local->size());
    local_.reset(new CountingCommunicator(*levels->local, std::vector<int>(local_size, 0), kinds_));
    cross_.reset(new CountingCommunicator(*levels->cross, {}, kinds_));
    levels_.local = local_.get();
    levels_.cross = cross_.get();
    levels_.world_rank = levels->world_rank;
  }
}

CountingCommunicator::CountingCommunicator(Communicator& level, std::vector<int> nodes,
                                           std::shared_ptr<Tally> tally)
    : inner_(&level), nodes_(std::move(nodes)), two_levels_(nullptr), kinds_(std::move(tally)) {}

std::uint64_t CountingCommunicator::allreduce_bytes(std::size_t count, std::size_t element_size,
                                                    int rank, int size) {
  if (size <= 1) return 0;
  const auto n = static_cast<std::uint64_t>(size);
  const auto r = static_cast<std::uint64_t>(rank);
  const std::uint64_t own_chunk = count / n + (r < count % n ? 1 : 0);
  // count + (n - 2) * own_chunk, written so that n == 2 needs no negative term.
  return (static_cast<std::uint64_t>(count) + (n - 2) * own_chunk) * element_size;
}

bool CountingCommunicator::remote(std::size_t other) const {
  const auto self = static_cast<std::size_t>(rank());
  if (nodes_.empty()) return other != self;
  return nodes_[other] != nodes_[self];
}

// Note [What the counters count]
CountingCommunicator::Bytes CountingCommunicator::allreduce_levels(std::size_t count,
                                                                   DataType type) const {
  const std::size_t element = size_of(type);
  Bytes b;
  if (two_levels_ != nullptr) {
    const Communicator& local = two_levels_->local();
    const Communicator& cross = two_levels_->cross();
    const int l = local.size(), i = local.rank();
    const std::size_t shard = HierarchicalCommunicator::shard_count(count, l, i);
    const std::uint64_t inside = allreduce_bytes(count, element, i, l);
    const std::uint64_t across = allreduce_bytes(shard, element, cross.rank(), cross.size());
    const std::uint64_t gather_sent = static_cast<std::uint64_t>(l - 1) * shard * element;
    const std::uint64_t gather_received = static_cast<std::uint64_t>(count - shard) * element;
    b.sent = inside + across + gather_sent;
    b.received = inside + across + gather_received;
    b.inter_sent = b.inter_received = across;
    return b;
  }
  const int n = size();
  b.sent = b.received = allreduce_bytes(count, element, rank(), n);
  if (n > 1) {
    const auto r = static_cast<std::size_t>(rank());
    const auto nn = static_cast<std::size_t>(n);
    b.inter_sent = remote((r + 1) % nn) ? b.sent : 0;
    b.inter_received = remote((r + nn - 1) % nn) ? b.received : 0;
  }
  return b;
}

void CountingCommunicator::record(TrafficKind kind, const Bytes& bytes) {
  auto& k = (*kinds_)[static_cast<std::size_t>(kind)];
  k.sent.fetch_add(bytes.sent, std::memory_order_relaxed);
  k.received.fetch_add(bytes.received, std::memory_order_relaxed);
  k.inter_sent.fetch_add(bytes.inter_sent, std::memory_order_relaxed);
  k.inter_received.fetch_add(bytes.inter_received, std::memory_order_relaxed);
  k.calls.fetch_add(1, std::memory_order_relaxed);
}

CountingCommunicator::Bytes CountingCommunicator::allgatherv_bytes(
    const std::vector<std::size_t>& recv_counts, std::size_t send_count, DataType type) const {
  const std::uint64_t element = size_of(type);
  const auto self = static_cast<std::size_t>(rank());
  const auto n = static_cast<std::size_t>(size());
  Bytes b;
  std::uint64_t remote_ranks = 0;
  // A count vector of the wrong size (which the wrapped communicator then refuses, uncounted) is
  // never looked up past the nodes' end.
  for (std::size_t q = 0; q < recv_counts.size(); ++q) {
    if (q == self) continue;
    b.received += recv_counts[q];
    if (q < n && remote(q)) {
      ++remote_ranks;
      b.inter_received += recv_counts[q];
    }
  }
  b.sent = static_cast<std::uint64_t>(size() - 1) * send_count * element;
  b.inter_sent = remote_ranks * send_count * element;
  b.received *= element;
  b.inter_received *= element;
  return b;
}

CountingCommunicator::Bytes CountingCommunicator::alltoallv_bytes(
    const std::vector<std::size_t>& send_counts, const std::vector<std::size_t>& recv_counts,
    DataType type) const {
  // Skips index rank() rather than subtracting it, so that count vectors of the wrong size (which
  // the wrapped communicator then refuses, uncounted) are never indexed past their end.
  const auto self = static_cast<std::size_t>(rank());
  const auto n = static_cast<std::size_t>(size());
  Bytes b;
  for (std::size_t r = 0; r < send_counts.size(); ++r) {
    if (r == self) continue;
    b.sent += send_counts[r];
    if (r < n && remote(r)) b.inter_sent += send_counts[r];
  }
  for (std::size_t r = 0; r < recv_counts.size(); ++r) {
    if (r == self) continue;
    b.received += recv_counts[r];
    if (r < n && remote(r)) b.inter_received += recv_counts[r];
  }
  const std::uint64_t element = size_of(type);
  b.sent *= element;
  b.received *= element;
  b.inter_sent *= element;
  b.inter_received *= element;
  return b;
}

CountingCommunicator::Bytes CountingCommunicator::broadcast_bytes(std::size_t count, DataType type,
                                                                  int root) const {
  const std::uint64_t bytes = static_cast<std::uint64_t>(count) * size_of(type);
  Bytes b;
  if (rank() == root) {
    std::uint64_t remote_ranks = 0;
    for (int q = 0; q < size(); ++q) {
      if (q != root && remote(static_cast<std::size_t>(q))) ++remote_ranks;
    }
    b.sent = bytes * static_cast<std::uint64_t>(size() - 1);
    b.inter_sent = bytes * remote_ranks;
  } else {
    b.received = bytes;
    b.inter_received =
        root >= 0 && root < size() && remote(static_cast<std::size_t>(root)) ? bytes : 0;
  }
  return b;
}

CountingCommunicator::Bytes CountingCommunicator::charge(const Collective& c) const {
  switch (c.op) {
    case CollectiveOp::kAllreduce:
      return allreduce_levels(c.count, c.type);
    case CollectiveOp::kAllgatherv:
      return allgatherv_bytes(c.recv_counts, c.count, c.type);
    case CollectiveOp::kAlltoallv:
      return alltoallv_bytes(c.send_counts, c.recv_counts, c.type);
    case CollectiveOp::kBroadcast:
      return broadcast_bytes(c.count, c.type, c.root);
  }
  return {};
}

void CountingCommunicator::set_guard(const void* owner, std::function<void()> guard) {
  std::lock_guard<std::mutex> lock(guards_mutex_);
  std::vector<std::pair<const void*, std::function<void()>>> kept;
  for (auto& g : guards_) {
    if (g.first != owner) kept.push_back(std::move(g));
  }
  if (guard) kept.emplace_back(owner, std::move(guard));
  guards_ = std::move(kept);
  guard_count_.store(guards_.size());
}

void CountingCommunicator::run_guards() {
  std::vector<std::function<void()>> calls;
  {
    std::lock_guard<std::mutex> lock(guards_mutex_);
    for (const auto& g : guards_) calls.push_back(g.second);
  }
  for (const auto& call : calls) call();  // outside the lock: a guard's wait runs collectives
}

// The inner communicator first: it refuses what it cannot carry (a data type it does not know,
// say) with its own CommError, which charge() would pre-empt with a plainer one.
WorkHandle CountingCommunicator::start(const Collective& c) {
  if (guard_count_.load() != 0) run_guards();
  WorkHandle work = inner_->start(c);
  record(c.kind, charge(c));
  return work;
}

void CountingCommunicator::run(const Collective& c) {
  if (guard_count_.load() != 0) run_guards();
  inner_->run(c);
  record(c.kind, charge(c));
}

TrafficCounters CountingCommunicator::counters() const {
  TrafficCounters out;
  const Tally& tally = *kinds_;
  for (std::size_t i = 0; i < tally.size(); ++i) {
    out.kinds[i].sent_bytes = tally[i].sent.load(std::memory_order_relaxed);
    out.kinds[i].received_bytes = tally[i].received.load(std::memory_order_relaxed);
    out.kinds[i].calls = tally[i].calls.load(std::memory_order_relaxed);
    out.kinds[i].inter_node_sent_bytes = tally[i].inter_sent.load(std::memory_order_relaxed);
    out.kinds[i].inter_node_received_bytes =
        tally[i].inter_received.load(std::memory_order_relaxed);
  }
  return out;
}

void CountingCommunicator::reset() {
  for (auto& k : *kinds_) {
    k.sent.store(0);
    k.received.store(0);
    k.calls.store(0);
    k.inter_sent.store(0);
    k.inter_received.store(0);
  }
}

}  // namespace gw
