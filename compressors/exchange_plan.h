// How the tensors of one bucket travel in one step. A plan is a pure function of the
// configuration, the layout, the world size and the step, so every rank computes the same plan
// and calls the same collectives with matching sizes (See Note [Plans agree across ranks]).
#pragma once

#include <cstddef>
#include <vector>

namespace gw::compressors {

// The element type of a bucket's dense part on the wire.
enum class DenseWire { kFloat32, kFloat16 };

// How a bucket's sparse part travels: (index, fp32 value) pairs (Note [Sparse message format]) or
// the compact wire (Note [Compact sparse wire], kernels/sparse_wire.h) with binary16 values, or
// with 4-bit or 2-bit values and a scale per block (Note [Low-bit wire values]).
enum class SparseWire { kPairs, kCompact, kCompact4, kCompact2 };
inline bool is_compact(SparseWire wire) { return wire != SparseWire::kPairs; }
// The bits a value takes on a compact wire (kernels::encode_wire's value_bits).
inline unsigned wire_value_bits(SparseWire wire) {
  return wire == SparseWire::kCompact4 ? 4u : wire == SparseWire::kCompact2 ? 2u : 16u;
}

// How a bucket's sparse part is summed over the ranks: every rank's whole message to every rank
// (an allgatherv, its lengths first), the same in one round of padded blocks
// (Note [Sparse allgather in one round]), or by split (Note [Sparse allreduce by split]).
enum class SparseAlgo { kAllgather, kSplit, kPadded };

// Note [Sparse allgather in one round]
// The allgatherv takes two rounds: every rank's message length, then the messages. Each round
// costs a latency (the harness measured about 3.5 ms per tiny Gloo allgather with 4 ranks on 2
// cores, as much as the whole step's link time at 100 Mbit/s), so `padded` sends one: every rank
// sends a block of 1 + W words, its message length L in the first word, then its L words, then
// zeros; W is padded_message_words(bucket, plan), the most words a message of this plan can take,
// known to every rank from the plan alone (Note [Plans agree across ranks]). On the pairs wire
// that is 1 + 2k per tensor, what a rank selecting its full k sends anyway; on the compact wire it
// is the most a segment can take with every index below the tensor's size (gaps add up to less
// than the size, which caps the gap widths: wire_most_words), a few percent above what is
// typical. The receivers check each L against W before reading a block (a PayloadError naming the
// sender otherwise), then check and sum the messages exactly as after the allgatherv: the same
// messages summed in the same order, so the result is the allgatherv's bit for bit. The counters
// count the padded blocks: what moved.

// Note [Sparse allreduce by split]
// The allgatherv sends each rank's k pairs to every other rank: k (n - 1) per rank, growing with
// the ranks. The split sends about 3k (n - 1) / n at any n, in the spirit of Ok-Topk's
// split-and-reduce (Li and Hoefler, PPoPP'22), without its balancing:
//  1. Each tensor's indices are cut into n ranges of ceil(numel / n) (split_range); a rank sends
//     rank r the pairs it selected in range r, indices relative to the range (one alltoallv,
//     counts first): about k (n - 1) / n pairs.
//  2. Rank r sums what every rank sent it for its range, in rank order (bit-identical wherever it
//     runs), and keeps the largest 2 ceil(k / n) of the sums (split_k): two shares, so a step
//     applies up to 2k values, between gTop-k's k and the allgatherv's union of up to nk (one
//     share slowed the 8-rank MLP's first epoch; docs/STRATEGIES.md gives the runs). Everything
//     it does not keep, and what the wire drops of what it keeps, goes into rank r's own residual
//     at those indices (SparseReselector::reselect), so the sum over the ranks of residuals and
//     applied values still equals the sum of what was accumulated: nothing is lost, it is sent
//     later, by rank r.
//  3. Every rank's kept pairs go to every rank (an allgatherv of about 2k / n pairs each, so
//     about 2k (n - 1) / n sent), which writes rank r's into range r of each tensor; every rank
//     decodes the same messages, so the bucket is the same everywhere.
// Every message is checked before anything is added (Note [Sparse message format]), against the
// receiving rank's range in step 1 and the sending rank's in step 3. The choice of algorithm
// depends only on the configuration and the world size (Note [Plans agree across ranks]).
struct SplitRange {
  std::size_t begin = 0;
  std::size_t len = 0;
};
inline std::size_t split_region(std::size_t numel, std::size_t ranks) {
  const std::size_t region = (numel + ranks - 1) / ranks;
  return region > 0 ? region : 1;
}
// Rank r's range of a tensor of numel elements cut into `ranks` ranges.
inline SplitRange split_range(std::size_t numel, std::size_t ranks, std::size_t r) {
  const std::size_t region = split_region(numel, ranks);
  SplitRange range;
  range.begin = r * region < numel ? r * region : numel;
  const std::size_t end = range.begin + region < numel ? range.begin + region : numel;
  range.len = end - range.begin;
  return range;
}
// The most pairs a rank keeps of its range of a tensor whose plan allows k: kSplitShares shares,
// at most k.
inline constexpr std::size_t kSplitShares = 2;
inline std::size_t split_k(std::size_t k, std::size_t ranks) {
  const std::size_t kept = kSplitShares * ((k + ranks - 1) / ranks);
  return kept < k ? kept : k;
}
// The most pairs a node's merged message keeps of one range of a tensor whose plan allows k, under
// the split over two levels (Note [Sparse allreduce over two levels], plugin/exchange/):
// one share, so that a node sends about what one rank would.
inline std::size_t node_merge_k(std::size_t k, std::size_t ranks) {
  const std::size_t kept = (k + ranks - 1) / ranks;
  return kept < k ? kept : k;
}

// Note [Plans agree across ranks]
// The plan decides which collectives run and their sizes (the dense part's element count, the
// sparse part's tensor list); a rank that planned differently would deadlock or mismatch. So a
// plan never depends on gradient values: only on the configuration (hashed and compared across
// ranks at start), the layout (also compared), the world size and the step number. The count a
// rank actually selects (at most k) varies, which is why the sparse part travels by allgatherv
// with its sizes exchanged first.
// A tensor that travels as low-rank factors (Note [PowerSGD], compressors/powersgd_compressor.h):
// its gradient taken as a row-major [rows, cols] matrix M, sent as P [rows, rank] and
// Q [cols, rank].
struct LowRankShape {
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::size_t rank = 0;
};

struct ExchangePlan {
  DenseWire dense_wire = DenseWire::kFloat32;
  SparseWire sparse_wire = SparseWire::kPairs;
  SparseAlgo sparse_algo = SparseAlgo::kAllgather;
  // Positions into BucketView::tensors, in memory order.
  std::vector<std::size_t> dense;   // summed with one allreduce
  std::vector<std::size_t> sparse;  // sent as (index, value) pairs, by sparse_algo
  std::vector<std::size_t> k;       // per sparse entry: the most pairs a rank sends for it
  // Sent as factors: every P summed in the dense part's allreduce (after the dense tensors), then
  // every Q in a second allreduce (Note [PowerSGD]).
  std::vector<std::size_t> low_rank;
  std::vector<LowRankShape> shapes;  // per low_rank entry
  // Every tensor the schedule would sparsify would have moved more bytes sparse than dense, so all
  // of them went to `dense` (see Note [When sparse falls back to dense]).
  bool dense_fallback = false;

  bool all_dense() const { return sparse.empty() && low_rank.empty(); }
  // Floats of every low_rank entry's P, and of every Q, in plan order.
  std::size_t p_count() const {
    std::size_t n = 0;
    for (const LowRankShape& s : shapes) n += s.rows * s.rank;
    return n;
  }
  std::size_t q_count() const {
    std::size_t n = 0;
    for (const LowRankShape& s : shapes) n += s.cols * s.rank;
    return n;
  }
  void clear() {
    dense_wire = DenseWire::kFloat32;
    sparse_wire = SparseWire::kPairs;
    sparse_algo = SparseAlgo::kAllgather;
    dense.clear();
    sparse.clear();
    k.clear();
    low_rank.clear();
    shapes.clear();
    dense_fallback = false;
  }
};

}  // namespace gw::compressors
