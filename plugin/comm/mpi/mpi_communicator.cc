#include "plugin/comm/mpi/mpi_communicator.h"

#include <sched.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <thread>
#include <utility>

#include "common/enum_names.h"
#include "kernels/device.h"
#include "kernels/elementwise.h"
#include "kernels/half.h"
#include "plugin/comm/mpi/mpi_runtime.h"
#include "plugin/config/registry.h"

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

// Note [Waiting for MPI]
// A rank that waits in a collective spins in MPI's progress loop. With a core per rank that is the
// quickest way to wait, but with more ranks on a node than it has cores, a spinning rank takes the
// core from a rank that computes, whose peers then wait (and spin) longer still. Open MPI gives the
// core up between polls by itself when its launcher sees more ranks than slots
// (mpi_yield_when_idle); MPICH's ch4 device has no such setting (MPIR_CVAR_POLLS_BEFORE_YIELD
// belongs to its older ch3 device). So gradwire can do the waiting itself (GRADWIRE_MPI_WAIT):
//   block  MPI's blocking collectives: MPI's tuned algorithms and MPI's own way of waiting.
//   yield  the non-blocking collective, polled with MPI_Test, with sched_yield() between polls.
//   auto   yield when some node has more ranks than the CPUs its ranks may run on (the union of
//          their affinity masks) and the MPI is not Open MPI; block otherwise.
// The blocking forms stay the default because Open MPI's blocking allreduce is faster than its
// non-blocking one (gradwire_bench_allreduce). Every rank must wait the same way, since a blocking
// collective never matches a non-blocking one: the constructor checks that the ranks asked for the
// same mode and resolves auto from facts reduced over every rank, so all ranks decide alike.

// Completes `request`, spinning in MPI_Wait or polling with a yield between polls.
int wait_request(MPI_Request* request, bool yield) {
  if (!yield) return MPI_Wait(request, MPI_STATUS_IGNORE);
  for (;;) {
    int done = 0;
    const int rc = MPI_Test(request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS || done) return rc;
    sched_yield();
  }
}

// Starts a non-blocking collective (`start(&request)` returns MPI's error code) and polls it to
// completion with a yield between polls; an error is a CommError naming `what` and the rank.
template <class Start>
void poll_collective(const char* what, int rank, Start start) {
  MPI_Request request = MPI_REQUEST_NULL;
  int rc = start(&request);
  if (rc == MPI_SUCCESS) rc = wait_request(&request, /*yield=*/true);
  if (rc != MPI_SUCCESS) {
    throw CommError(std::string(what) + " failed on rank " + std::to_string(rank) + ": " +
                    mpi_error_text(rc));
  }
}

// One non-blocking MPI collective. Owns the request, and the count/displacement arrays MPI reads
// until completion.
class MpiWork : public Work {
 public:
  MpiWork(std::string what, int rank, bool yield)
      : what_(std::move(what)), rank_(rank), yield_(yield) {}
  ~MpiWork() override {
    if (request_ != MPI_REQUEST_NULL) wait_request(&request_, yield_);
  }

  void wait() override {
    if (request_ != MPI_REQUEST_NULL) {
      const int rc = wait_request(&request_, yield_);
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
  std::vector<int> send_counts;  // an alltoallv's send side (counts and displacements: receive)
  std::vector<int> send_displacements;

 private:
  std::string what_;
  int rank_;
  bool yield_;
  MPI_Request request_ = MPI_REQUEST_NULL;
  std::string error_;
};

// Note [float16 all-reduce]
// MPI has no binary16 type, so DataType::kFloat16 travels as MPI_UINT16_T and is reduced by three
// user-defined, commutative MPI ops, one per ReduceOp. Each pairwise combine converts both operands
// to float, combines in float and rounds back to binary16 (round to nearest even):
//   sum       round_half(float(a) + float(b)), +-inf past the binary16 range. float's 24 bits are
//             enough (>= 2 x 11 + 2) that this equals the correctly rounded binary16 sum, and no
//             float intermediate is subnormal (binary16 values are multiples of 2^-24), so FTZ/DAZ
//             settings cannot change it.
//   max, min  the larger / smaller operand, with +0 above -0.
//   NaN       a NaN operand (or inf + -inf) gives the quiet NaN 0x7E00, whatever its payload.
// The signed-zero order and the single NaN make combine(a, b) and combine(b, a) the same bits for
// every pair, so declaring the ops commutative lets MPI pick either operand order without changing
// a result. The grouping over ranks is MPI's (the sum is not associative, so a result may depend on
// the algorithm, and so on the count and the number of ranks), but every rank ends with the same
// bits: MPI's algorithms either reduce each element once and distribute it (ring, reduce-scatter
// then allgather, reduce then broadcast), or have both partners of an exchange combine the same two
// partial results (recursive doubling), which gives the same bits because combine is symmetric.
// comm_mpi_test checks this bit identity at 2, 3 and 4 ranks (it also passed under each of
// OpenMPI 4.1's forced coll_tuned_allreduce_algorithm 1-6).
// The ops convert kHalfChunk elements at a time through stack buffers with the kernels' casts (F16C
// where the CPU has it): vector speed, no allocation, and nothing that throws into MPI's C frames.
//
// Each MpiCommunicator owns its ops, with the same lifetime rule as its duplicated comm_: created
// once MPI is known to be initialised, freed by the destructor unless MPI is already finalized
// (then MPI_Finalize has released them, and MPI_Op_free may no longer be called). A process-wide
// registry freed by MpiRuntime would not be RAII-clean: MpiRuntime finalizes only when it
// initialised MPI, and an MpiCommunicator needs only that MPI is initialised (a program may call
// MPI_Init itself), so in such a program nothing would free the registry before MPI_Finalize.
// MPI_Op_create is local to the process (no communication), so three ops per communicator cost
// nothing.

constexpr std::size_t kHalfChunk = 1024;

struct HalfSum {
  float operator()(float a, float b) const {
    const float s = a + b;
    return s == s ? s : std::numeric_limits<float>::quiet_NaN();
  }
};

struct HalfMax {
  float operator()(float a, float b) const {
    const float larger = a > b ? a : b;
    const float equal = std::signbit(a) ? b : a;  // a == b: only +0 and -0 differ; +0 wins
    const float r = a == b ? equal : larger;
    return (a != a || b != b) ? std::numeric_limits<float>::quiet_NaN() : r;
  }
};

struct HalfMin {
  float operator()(float a, float b) const {
    const float smaller = a < b ? a : b;
    const float equal = std::signbit(a) ? a : b;  // -0 wins
    const float r = a == b ? equal : smaller;
    return (a != a || b != b) ? std::numeric_limits<float>::quiet_NaN() : r;
  }
};

// An MPI_User_function: inout[i] = combine(in[i], inout[i]) over binary16 bits.
template <class Combine>
void reduce_half(void* in, void* inout, int* len, MPI_Datatype* /*type*/) noexcept {
  const auto* a = static_cast<const Half*>(in);
  auto* b = static_cast<Half*>(inout);
  const std::size_t n = *len > 0 ? static_cast<std::size_t>(*len) : 0;
  float fa[kHalfChunk];
  float fb[kHalfChunk];
  const Combine combine;
  for (std::size_t i = 0; i < n; i += kHalfChunk) {
    const std::size_t m = std::min(kHalfChunk, n - i);
    kernels::cast_fp16_to_fp32(a + i, fa, m, kernels::Stream::host());
    kernels::cast_fp16_to_fp32(b + i, fb, m, kernels::Stream::host());
    for (std::size_t j = 0; j < m; ++j) fb[j] = combine(fa[j], fb[j]);
    kernels::cast_fp32_to_fp16(fb, b + i, m, kernels::Stream::host());
  }
}

}  // namespace

void MpiCommunicator::HalfOps::create() {
  GW_MPI_CHECK(MPI_Op_create(&reduce_half<HalfSum>, 1, &sum_), -1);
  GW_MPI_CHECK(MPI_Op_create(&reduce_half<HalfMax>, 1, &max_), -1);
  GW_MPI_CHECK(MPI_Op_create(&reduce_half<HalfMin>, 1, &min_), -1);
}

MpiCommunicator::HalfOps::~HalfOps() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (MPI_Op* op : {&sum_, &max_, &min_}) {
    if (*op != MPI_OP_NULL) MPI_Op_free(op);
  }
}

MPI_Op MpiCommunicator::HalfOps::get(ReduceOp op) const {
  switch (op) {
    case ReduceOp::kSum:
      return sum_;
    case ReduceOp::kMax:
      return max_;
    case ReduceOp::kMin:
      return min_;
  }
  throw std::logic_error("unknown ReduceOp");
}

MPI_Op MpiCommunicator::mpi_op(DataType type, ReduceOp op) const {
  return type == DataType::kFloat16 ? half_ops_.get(op) : builtin_op(op);
}

const char* to_string(MpiWait wait) {
  switch (wait) {
    case MpiWait::kAuto:
      return "auto";
    case MpiWait::kBlock:
      return "block";
    case MpiWait::kYield:
      return "yield";
  }
  return "?";
}

MpiWait parse_mpi_wait(std::string_view text) {
  constexpr MpiWait kWaits[] = {MpiWait::kAuto, MpiWait::kBlock, MpiWait::kYield};
  if (const auto wait = find_by_name(text, kWaits)) return *wait;
  throw std::invalid_argument("MPI wait mode '" + std::string(text) +
                              "' is not one of: " + names_of(kWaits));
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
  cuda_usable_ = kernels::cuda_device_available();  // Note [Staging device buffers]
  try {
    resolve_wait(wait);
  } catch (...) {
    MPI_Comm_free(&comm_);  // the destructor does not run for a constructor that throws
    throw;
  }
}

namespace {

// The ranks of `comm` on this node and the CPUs any of them may run on.
struct NodeShare {
  int ranks = 1;
  int cpus = 1;
};

NodeShare node_share(MPI_Comm comm, int rank) {
  MPI_Comm node = MPI_COMM_NULL;
  GW_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node), rank);
  struct Free {
    MPI_Comm* c;
    ~Free() { MPI_Comm_free(c); }
  } free_node{&node};
  MPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN);
  NodeShare share;
  MPI_Comm_size(node, &share.ranks);
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  sched_getaffinity(0, sizeof cpus, &cpus);  // on failure: no CPUs from this rank, see below
  GW_MPI_CHECK(
      MPI_Allreduce(MPI_IN_PLACE, &cpus, static_cast<int>(sizeof cpus), MPI_BYTE, MPI_BOR, node),
      rank);
  share.cpus = CPU_COUNT(&cpus);
  if (share.cpus == 0) share.cpus = static_cast<int>(std::thread::hardware_concurrency());
  share.cpus = std::max(share.cpus, 1);
  return share;
}

}  // namespace

void MpiCommunicator::resolve_wait(MpiWait requested) {
  const NodeShare share = node_share(comm_, rank_);
  const int oversubscribed = share.ranks > share.cpus ? 1 : 0;
  // One reduction: the largest and smallest mode asked for, and whether any node is oversubscribed.
  int facts[3] = {static_cast<int>(requested), -static_cast<int>(requested), oversubscribed};
  GW_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, facts, 3, MPI_INT, MPI_MAX, comm_), rank_);
  const auto most = static_cast<MpiWait>(facts[0]);
  const auto least = static_cast<MpiWait>(-facts[1]);
  if (most != least) {
    throw config::ConfigError("GRADWIRE_MPI_WAIT differs across ranks (both '" +
                              std::string(to_string(least)) + "' and '" + to_string(most) +
                              "' were asked for; this rank asked for '" + to_string(requested) +
                              "'): every rank must wait for collectives the same way. Set the " +
                              "same value on every rank (accepted: auto, block, yield)");
  }
  const std::string here = std::to_string(share.ranks) + " ranks on " + std::to_string(share.cpus) +
                           " CPUs on this rank's node";
  if (requested != MpiWait::kAuto) {
    wait_ = requested;
    wait_reason_ = std::string("GRADWIRE_MPI_WAIT=") + to_string(requested) + " (" + here + ")";
    return;
  }
#ifdef OPEN_MPI
  constexpr bool kMpiYieldsItself = true;
#else
  constexpr bool kMpiYieldsItself = false;
#endif
  const bool any_oversubscribed = facts[2] != 0;
  wait_ = any_oversubscribed && !kMpiYieldsItself ? MpiWait::kYield : MpiWait::kBlock;
  const char* why = !any_oversubscribed ? "no node has more ranks than CPUs"
                    : kMpiYieldsItself  ? "Open MPI yields by itself where it sees more ranks "
                                          "than slots"
                                        : "a node has more ranks than CPUs";
  wait_reason_ = std::string("auto: ") + to_string(wait_) + ", " + why + " (" + here + ")";
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

namespace {

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

// MPI's int counts and displacements for an alltoallv, both sides, after checking the arguments
// (what a rank can check alone: the peers' counts are the caller's to agree on).
void alltoallv_layout(const std::vector<std::size_t>& send_counts,
                      const std::vector<std::size_t>& recv_counts, int rank, int size,
                      std::vector<int>* send_ints, std::vector<int>* send_displacements,
                      std::vector<int>* recv_ints, std::vector<int>* recv_displacements) {
  const auto here = [rank] { return "alltoallv on rank " + std::to_string(rank) + ": "; };
  if (send_counts.size() != static_cast<std::size_t>(size)) {
    throw CommError(here() + std::to_string(send_counts.size()) + " send counts for " +
                    std::to_string(size) + " ranks");
  }
  if (recv_counts.size() != static_cast<std::size_t>(size)) {
    throw CommError(here() + std::to_string(recv_counts.size()) + " receive counts for " +
                    std::to_string(size) + " ranks");
  }
  const auto self = static_cast<std::size_t>(rank);
  if (send_counts[self] != recv_counts[self]) {
    throw CommError(here() + "send count " + std::to_string(send_counts[self]) +
                    " to this rank differs from the receive count " +
                    std::to_string(recv_counts[self]) + " from this rank");
  }
  block_layout(send_counts, "alltoallv (send)", "alltoallv (send total)", rank, send_ints,
               send_displacements);
  block_layout(recv_counts, "alltoallv (receive)", "alltoallv (receive total)", rank, recv_ints,
               recv_displacements);
}

void check_root(int root, int rank, int size) {
  if (root < 0 || root >= size) {
    throw CommError("broadcast on rank " + std::to_string(rank) + ": root " + std::to_string(root) +
                    " is not a rank of this " + std::to_string(size) + "-rank communicator");
  }
}

}  // namespace

WorkHandle MpiCommunicator::allreduce_async(void* buffer, std::size_t count, DataType type,
                                            ReduceOp op, TrafficKind kind) {
  if (on_device(buffer)) {
    staged_allreduce(buffer, count, type, op, kind);
    return std::make_unique<MpiWork>("MPI_Iallreduce", rank_, false);  // complete already
  }
  const int n = to_mpi_count(count, "allreduce", rank_);
  auto work = std::make_unique<MpiWork>("MPI_Iallreduce", rank_, wait_ == MpiWait::kYield);
  if (n > 0) {
    GW_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, buffer, n, mpi_type(type), mpi_op(type, op), comm_,
                                work->request()),
                 rank_);
  } else {
    // Zero elements still synchronise like the collective would, keeping call order aligned.
    GW_MPI_CHECK(MPI_Ibarrier(comm_, work->request()), rank_);
  }
  return work;
}

void MpiCommunicator::allreduce(void* buffer, std::size_t count, DataType type, ReduceOp op,
                                TrafficKind kind) {
  if (on_device(buffer)) {
    staged_allreduce(buffer, count, type, op, kind);
    return;
  }
  const int n = to_mpi_count(count, "allreduce", rank_);
  if (wait_ == MpiWait::kYield) {
    poll_collective("MPI_Iallreduce", rank_, [&](MPI_Request* request) {
      return n > 0 ? MPI_Iallreduce(MPI_IN_PLACE, buffer, n, mpi_type(type), mpi_op(type, op),
                                    comm_, request)
                   : MPI_Ibarrier(comm_, request);
    });
  } else if (n > 0) {
    GW_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buffer, n, mpi_type(type), mpi_op(type, op), comm_),
                 rank_);
  } else {
    GW_MPI_CHECK(MPI_Barrier(comm_), rank_);
  }
}

WorkHandle MpiCommunicator::allgatherv_async(const void* send, std::size_t send_count, void* recv,
                                             std::vector<std::size_t> recv_counts, DataType type,
                                             TrafficKind kind) {
  if (on_device(send) || on_device(recv)) {
    staged_allgatherv(send, send_count, recv, std::move(recv_counts), type, kind);
    return std::make_unique<MpiWork>("MPI_Iallgatherv", rank_, false);  // complete already
  }
  auto work = std::make_unique<MpiWork>("MPI_Iallgatherv", rank_, wait_ == MpiWait::kYield);
  allgatherv_layout(recv_counts, send_count, rank_, size_, &work->counts, &work->displacements);
  GW_MPI_CHECK(
      MPI_Iallgatherv(send, static_cast<int>(send_count), mpi_type(type), recv, work->counts.data(),
                      work->displacements.data(), mpi_type(type), comm_, work->request()),
      rank_);
  return work;
}

void MpiCommunicator::allgatherv(const void* send, std::size_t send_count, void* recv,
                                 std::vector<std::size_t> recv_counts, DataType type,
                                 TrafficKind kind) {
  if (on_device(send) || on_device(recv)) {
    staged_allgatherv(send, send_count, recv, std::move(recv_counts), type, kind);
    return;
  }
  std::vector<int> counts, displacements;
  allgatherv_layout(recv_counts, send_count, rank_, size_, &counts, &displacements);
  if (wait_ == MpiWait::kYield) {
    poll_collective("MPI_Iallgatherv", rank_, [&](MPI_Request* request) {
      return MPI_Iallgatherv(send, static_cast<int>(send_count), mpi_type(type), recv,
                             counts.data(), displacements.data(), mpi_type(type), comm_, request);
    });
    return;
  }
  GW_MPI_CHECK(MPI_Allgatherv(send, static_cast<int>(send_count), mpi_type(type), recv,
                              counts.data(), displacements.data(), mpi_type(type), comm_),
               rank_);
}

WorkHandle MpiCommunicator::alltoallv_async(const void* send, std::vector<std::size_t> send_counts,
                                            void* recv, std::vector<std::size_t> recv_counts,
                                            DataType type, TrafficKind kind) {
  if (on_device(send) || on_device(recv)) {
    staged_alltoallv(send, std::move(send_counts), recv, std::move(recv_counts), type, kind);
    return std::make_unique<MpiWork>("MPI_Ialltoallv", rank_, false);  // complete already
  }
  auto work = std::make_unique<MpiWork>("MPI_Ialltoallv", rank_, wait_ == MpiWait::kYield);
  alltoallv_layout(send_counts, recv_counts, rank_, size_, &work->send_counts,
                   &work->send_displacements, &work->counts, &work->displacements);
  GW_MPI_CHECK(MPI_Ialltoallv(send, work->send_counts.data(), work->send_displacements.data(),
                              mpi_type(type), recv, work->counts.data(), work->displacements.data(),
                              mpi_type(type), comm_, work->request()),
               rank_);
  return work;
}

void MpiCommunicator::alltoallv(const void* send, std::vector<std::size_t> send_counts, void* recv,
                                std::vector<std::size_t> recv_counts, DataType type,
                                TrafficKind kind) {
  if (on_device(send) || on_device(recv)) {
    staged_alltoallv(send, std::move(send_counts), recv, std::move(recv_counts), type, kind);
    return;
  }
  std::vector<int> send_ints, send_displacements, recv_ints, recv_displacements;
  alltoallv_layout(send_counts, recv_counts, rank_, size_, &send_ints, &send_displacements,
                   &recv_ints, &recv_displacements);
  if (wait_ == MpiWait::kYield) {
    poll_collective("MPI_Ialltoallv", rank_, [&](MPI_Request* request) {
      return MPI_Ialltoallv(send, send_ints.data(), send_displacements.data(), mpi_type(type), recv,
                            recv_ints.data(), recv_displacements.data(), mpi_type(type), comm_,
                            request);
    });
    return;
  }
  GW_MPI_CHECK(
      MPI_Alltoallv(send, send_ints.data(), send_displacements.data(), mpi_type(type), recv,
                    recv_ints.data(), recv_displacements.data(), mpi_type(type), comm_),
      rank_);
}

WorkHandle MpiCommunicator::broadcast_async(void* buffer, std::size_t count, DataType type,
                                            int root, TrafficKind kind) {
  if (on_device(buffer)) {
    staged_broadcast(buffer, count, type, root, kind);
    return std::make_unique<MpiWork>("MPI_Ibcast", rank_, false);  // complete already
  }
  check_root(root, rank_, size_);
  const int n = to_mpi_count(count, "broadcast", rank_);
  auto work = std::make_unique<MpiWork>("MPI_Ibcast", rank_, wait_ == MpiWait::kYield);
  GW_MPI_CHECK(MPI_Ibcast(buffer, n, mpi_type(type), root, comm_, work->request()), rank_);
  return work;
}

void MpiCommunicator::broadcast(void* buffer, std::size_t count, DataType type, int root,
                                TrafficKind kind) {
  if (on_device(buffer)) {
    staged_broadcast(buffer, count, type, root, kind);
    return;
  }
  check_root(root, rank_, size_);
  const int n = to_mpi_count(count, "broadcast", rank_);
  if (wait_ == MpiWait::kYield) {
    poll_collective("MPI_Ibcast", rank_, [&](MPI_Request* request) {
      return MPI_Ibcast(buffer, n, mpi_type(type), root, comm_, request);
    });
    return;
  }
  GW_MPI_CHECK(MPI_Bcast(buffer, n, mpi_type(type), root, comm_), rank_);
}

void MpiCommunicator::barrier() {
  if (wait_ == MpiWait::kYield) {
    poll_collective("MPI_Ibarrier", rank_,
                    [&](MPI_Request* request) { return MPI_Ibarrier(comm_, request); });
    return;
  }
  GW_MPI_CHECK(MPI_Barrier(comm_), rank_);
}

// Note [Staging device buffers]
// MPI here is not CUDA-aware (and a CUDA-aware MPI is not something gradwire can count on), so a
// collective on CUDA device memory goes through pinned host memory: the device data is copied in,
// the host collective (the code path of host buffers, with its float16 ops and its way of waiting)
// runs on the pinned copy, and the result is copied back. The copies run on a stream the
// communicator owns, made on first use on the buffer's device (remade if a later buffer is on
// another device), and the pinned buffer is kept and grown, never shrunk, so a steady state
// allocates nothing. This is what lets several ranks share one GPU, which NCCL refuses.
// - The staged forms are blocking: an _async call on device memory returns a Work that is already
//   complete. One pinned buffer per communicator cannot serve two operations in flight, and the
//   copy back needs the collective's result anyway; overlap with computation comes from the
//   engine thread that calls the communicator, not from here.
// - The staging stream is non-blocking (Note [Streams]), so it does not wait for work the caller
//   enqueued elsewhere: device work that wrote a buffer must be complete before the call (the
//   caller synchronises its stream, or waits on its event), as for any host reader of that memory.
// - Host buffers never come here: the constructor asks once whether a CUDA device is usable, and
//   without one every buffer is host memory and the only cost is that flag; with one, each call
//   asks the runtime where its buffer lives (kernels::device_of, a pointer-attribute query).
// - allgatherv and alltoallv stage send and receive independently (either may be host memory),
//   both in one pinned allocation: [send | receive].

const kernels::Stream& MpiCommunicator::staging_stream(const void* device_buffer) {
  const int device = kernels::cuda_device_of(device_buffer);
  if (staging_stream_.is_host() || staging_stream_.cuda_device() != device) {
    staging_stream_ = kernels::Stream::cuda(device);
  }
  return staging_stream_;
}

void MpiCommunicator::staged_allreduce(void* buffer, std::size_t count, DataType type, ReduceOp op,
                                       TrafficKind kind) {
  to_mpi_count(count, "allreduce", rank_);
  const std::size_t bytes = count * size_of(type);
  unsigned char* host = staging_.reserve_discard(bytes);
  const kernels::Stream& stream = staging_stream(buffer);
  kernels::copy_bytes(host, buffer, bytes, stream);
  stream.synchronize();
  MpiCommunicator::allreduce(host, count, type, op, kind);  // the host path
  kernels::copy_bytes(buffer, host, bytes, stream);
  stream.synchronize();
}

void MpiCommunicator::staged_allgatherv(const void* send, std::size_t send_count, void* recv,
                                        std::vector<std::size_t> recv_counts, DataType type,
                                        TrafficKind kind) {
  std::vector<int> counts, displacements;  // checks the arguments before anything is copied
  allgatherv_layout(recv_counts, send_count, rank_, size_, &counts, &displacements);
  std::size_t total = 0;
  for (const std::size_t c : recv_counts) total += c;
  const std::size_t element = size_of(type);
  const bool stage_send = on_device(send);
  const bool stage_recv = on_device(recv);
  const std::size_t send_bytes = stage_send ? send_count * element : 0;
  const std::size_t recv_bytes = stage_recv ? total * element : 0;
  unsigned char* host = staging_.reserve_discard(send_bytes + recv_bytes);
  const void* host_send = send;
  void* host_recv = recv;
  if (stage_send) {
    const kernels::Stream& stream = staging_stream(send);
    kernels::copy_bytes(host, send, send_bytes, stream);
    stream.synchronize();
    host_send = host;
  }
  if (stage_recv) host_recv = host + send_bytes;
  MpiCommunicator::allgatherv(host_send, send_count, host_recv, std::move(recv_counts), type, kind);
  if (stage_recv) {
    const kernels::Stream& stream = staging_stream(recv);
    kernels::copy_bytes(recv, host_recv, recv_bytes, stream);
    stream.synchronize();
  }
}

void MpiCommunicator::staged_alltoallv(const void* send, std::vector<std::size_t> send_counts,
                                       void* recv, std::vector<std::size_t> recv_counts,
                                       DataType type, TrafficKind kind) {
  // Checks the arguments before anything is copied.
  std::vector<int> send_ints, send_displacements, recv_ints, recv_displacements;
  alltoallv_layout(send_counts, recv_counts, rank_, size_, &send_ints, &send_displacements,
                   &recv_ints, &recv_displacements);
  const std::size_t send_total =
      std::accumulate(send_counts.begin(), send_counts.end(), std::size_t{0});
  const std::size_t recv_total =
      std::accumulate(recv_counts.begin(), recv_counts.end(), std::size_t{0});
  const std::size_t element = size_of(type);
  const bool stage_send = on_device(send);
  const bool stage_recv = on_device(recv);
  const std::size_t send_bytes = stage_send ? send_total * element : 0;
  const std::size_t recv_bytes = stage_recv ? recv_total * element : 0;
  unsigned char* host = staging_.reserve_discard(send_bytes + recv_bytes);
  const void* host_send = send;
  void* host_recv = recv;
  if (stage_send) {
    const kernels::Stream& stream = staging_stream(send);
    kernels::copy_bytes(host, send, send_bytes, stream);
    stream.synchronize();
    host_send = host;
  }
  if (stage_recv) host_recv = host + send_bytes;
  MpiCommunicator::alltoallv(host_send, std::move(send_counts), host_recv, std::move(recv_counts),
                             type, kind);
  if (stage_recv) {
    const kernels::Stream& stream = staging_stream(recv);
    kernels::copy_bytes(recv, host_recv, recv_bytes, stream);
    stream.synchronize();
  }
}

void MpiCommunicator::staged_broadcast(void* buffer, std::size_t count, DataType type, int root,
                                       TrafficKind kind) {
  check_root(root, rank_, size_);
  to_mpi_count(count, "broadcast", rank_);
  const std::size_t bytes = count * size_of(type);
  unsigned char* host = staging_.reserve_discard(bytes);
  const kernels::Stream& stream = staging_stream(buffer);
  if (rank_ == root) {
    kernels::copy_bytes(host, buffer, bytes, stream);
    stream.synchronize();
  }
  MpiCommunicator::broadcast(host, count, type, root, kind);
  if (rank_ != root) {
    kernels::copy_bytes(buffer, host, bytes, stream);
    stream.synchronize();
  }
}

}  // namespace gw
