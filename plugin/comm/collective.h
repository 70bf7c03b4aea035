// One collective, described once (Note [A collective described once]): what Communicator::start
// and Communicator::run take, and what every backend and decorator passes on.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gw {

namespace kernels {
class Stream;
}

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

enum class CollectiveOp { kAllreduce, kAllgatherv, kAlltoallv, kBroadcast };
const char* to_string(CollectiveOp op);  // "allreduce", "allgatherv", "alltoallv", "broadcast"

// Note [A collective described once]
// A collective is one value: the operation, its buffers and counts, the element type, the reduce
// op, the root, the traffic kind, and where its inputs are ready. Communicator has one virtual for
// the asynchronous form (start) and one for the blocking form (run), so a decorator (counting,
// staging, routing, the two levels) overrides one or two methods and passes the description on
// unchanged, and a field added here (as ready_on was) reaches every layer without a new signature.
// The per-operation methods callers use (allreduce, allgatherv_async, ...) are Communicator's
// non-virtual wrappers that build one with the factories below.
//
// Buffers: allreduce and broadcast work in place (send and recv name the same buffer); allgatherv
// and alltoallv read send and write recv, which must not overlap.
//
// ready_on says where the inputs are ready:
//   nullptr    as it always was: host inputs are complete at the call; a layer that must know
//              where a pointer lives (a stager, a router) asks CUDA (kernels::device_of).
//   a stream   every buffer lives in that stream's memory (host memory for the host stream, that
//              device's memory for a CUDA stream), and the inputs are complete once the work
//              enqueued on that stream so far has run. No layer asks CUDA about a pointer, and a
//              stager orders its copies after that stream with an event instead of requiring the
//              caller to have synchronised it (Note [Staging device buffers]).
// The stream must outlive the call (start's, or run's); the buffers, as always, until the Work's
// wait() returns.
struct Collective {
  CollectiveOp op = CollectiveOp::kAllreduce;
  const void* send = nullptr;
  void* recv = nullptr;
  // allreduce, broadcast: the elements of the buffer; allgatherv: this rank's send count.
  std::size_t count = 0;
  std::vector<std::size_t> send_counts;  // alltoallv: block r (for rank r) of send
  std::vector<std::size_t> recv_counts;  // allgatherv, alltoallv: rank r's block of recv
  DataType type = DataType::kFloat32;
  ReduceOp reduce = ReduceOp::kSum;  // allreduce
  int root = 0;                      // broadcast
  TrafficKind kind = TrafficKind::kControl;
  const kernels::Stream* ready_on = nullptr;

  // In place: buffer[i] = op over ranks of buffer[i].
  static Collective allreduce(void* buffer, std::size_t count, DataType type, ReduceOp op,
                              TrafficKind kind);
  // recv receives every rank's send block, in rank order; recv_counts[r] is rank r's send_count
  // (recv_counts.size() == size(), recv_counts[rank()] == send_count).
  static Collective allgatherv(const void* send, std::size_t send_count, void* recv,
                               std::vector<std::size_t> recv_counts, DataType type,
                               TrafficKind kind);
  // send holds size() blocks back to back, block r (send_counts[r] elements) for rank r; recv
  // receives rank r's block for this rank at the offset sum(recv_counts[0..r)), recv_counts[r]
  // elements. send_counts.size() == recv_counts.size() == size(); recv_counts[r] must equal what
  // rank r sends here (the caller exchanges counts first, e.g. with an allgatherv of the counts).
  static Collective alltoallv(const void* send, std::vector<std::size_t> send_counts, void* recv,
                              std::vector<std::size_t> recv_counts, DataType type,
                              TrafficKind kind);
  // buffer on every rank receives root's buffer.
  static Collective broadcast(void* buffer, std::size_t count, DataType type, int root,
                              TrafficKind kind);

  // allreduce and broadcast: send and recv are one buffer.
  bool in_place() const;
  // The elements rank `rank` reads from send and writes to recv (a broadcast's root only reads,
  // the others only write).
  std::size_t elements_read(int rank) const;
  std::size_t elements_written(int rank) const;
};

// The checks a rank can make alone, the same for every backend: the count vectors against the
// communicator's size and this rank's own block, and the root's range. Throws CommError
// "<backend><op> on rank R: ..." (backend: "" or "NCCL ") before anything is sent.
void check_arguments(const Collective& c, int rank, int size, std::string_view backend = "");

}  // namespace gw
