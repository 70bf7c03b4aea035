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

[[noreturn]] void throw_mpi_error(const std::string& what, int rank, int code) {
  throw CommError(what + " failed on rank " + std::to_string(rank) + ": " + mpi_error_text(code));
}

// Checks an MPI call's return code; the error names the call and the rank.
#define GW_MPI_CHECK(call, rank)                                             \
  do {                                                                       \
    const int gw_mpi_rc = (call);                                            \
    if (gw_mpi_rc != MPI_SUCCESS) throw_mpi_error(#call, (rank), gw_mpi_rc); \
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
  if (rc != MPI_SUCCESS) throw_mpi_error(what, rank, rc);
}

// One non-blocking MPI collective: owns its request, and waits for it when destroyed unwaited.
class MpiWork : public Work {
 public:
  MpiWork(std::string what, int rank, bool yield)
      : what_(std::move(what)), rank_(rank), yield_(yield) {}
  ~MpiWork() override { complete_quietly(); }

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

 protected:
  // Completes the request if it is still running, ignoring its error: for destructors, which must
  // neither free what MPI still reads (a subclass's arrays) nor throw.
  void complete_quietly() noexcept {
    if (request_ != MPI_REQUEST_NULL) wait_request(&request_, yield_);
    request_ = MPI_REQUEST_NULL;
  }

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

MpiLayout MpiCommunicator::layout(const Collective& c) const {
  check_arguments(c, rank_, size_);
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
  if (staged(c)) return completed_work();
  const char* what = mpi_call_name(c.op, /*blocking=*/false);
  auto work = std::make_unique<MpiCollectiveWork>(what, rank_, wait_ == MpiWait::kYield, layout(c));
  const int rc = call(c, work->layout, work->request());
  if (rc != MPI_SUCCESS) throw_mpi_error(what, rank_, rc);
  return work;
}

void MpiCommunicator::run(const Collective& c) {
  if (staged(c)) return;
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

bool MpiCommunicator::staged(const Collective& c) {
  if (!on_device(c.send) && !on_device(c.recv)) return false;
  layout(c);  // checks the arguments before anything is copied
  switch (c.op) {
    case CollectiveOp::kAllreduce:
      staged_allreduce(c.recv, c.count, c.type, c.reduce, c.kind);
      break;
    case CollectiveOp::kAllgatherv:
      staged_allgatherv(c.send, c.count, c.recv, c.recv_counts, c.type, c.kind);
      break;
    case CollectiveOp::kAlltoallv:
      staged_alltoallv(c.send, c.send_counts, c.recv, c.recv_counts, c.type, c.kind);
      break;
    case CollectiveOp::kBroadcast:
      staged_broadcast(c.recv, c.count, c.type, c.root, c.kind);
      break;
  }
  return true;
}

void MpiCommunicator::staged_allreduce(void* buffer, std::size_t count, DataType type, ReduceOp op,
                                       TrafficKind kind) {
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
