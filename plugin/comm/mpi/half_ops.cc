#include "plugin/comm/mpi/half_ops.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>

#include "kernels/elementwise.h"
#include "kernels/half.h"
#include "kernels/stream.h"
#include "plugin/comm/mpi/mpi_error.h"

namespace gw {
namespace {

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
// Each MpiCommunicator owns its ops (a HalfOps), with the same lifetime rule as its duplicated
// comm_: created once MPI is known to be initialised, freed by the destructor unless MPI is already
// finalized (then MPI_Finalize has released them, and MPI_Op_free may no longer be called). A
// process-wide registry freed by MpiRuntime would not be RAII-clean: MpiRuntime finalizes only when
// it initialised MPI, and an MpiCommunicator needs only that MPI is initialised (a program may call
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

void HalfOps::create() {
  GW_MPI_CHECK(MPI_Op_create(&reduce_half<HalfSum>, 1, &sum_), -1);
  GW_MPI_CHECK(MPI_Op_create(&reduce_half<HalfMax>, 1, &max_), -1);
  GW_MPI_CHECK(MPI_Op_create(&reduce_half<HalfMin>, 1, &min_), -1);
}

HalfOps::~HalfOps() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (MPI_Op* op : {&sum_, &max_, &min_}) {
    if (*op != MPI_OP_NULL) MPI_Op_free(op);
  }
}

MPI_Op HalfOps::get(ReduceOp op) const {
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

}  // namespace gw
