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
// the compact wire (Note [Compact sparse wire], kernels/sparse_wire.h).
enum class SparseWire { kPairs, kCompact };

// Note [Plans agree across ranks]
// The plan decides which collectives run and their sizes (the dense part's element count, the
// sparse part's tensor list); a rank that planned differently would deadlock or mismatch. So a
// plan never depends on gradient values: only on the configuration (hashed and compared across
// ranks at start), the layout (also compared), the world size and the step number. The count a
// rank actually selects (at most k) varies, which is why the sparse part travels by allgatherv
// with its sizes exchanged first.
struct ExchangePlan {
  DenseWire dense_wire = DenseWire::kFloat32;
  SparseWire sparse_wire = SparseWire::kPairs;
  // Positions into BucketView::tensors, in memory order.
  std::vector<std::size_t> dense;   // summed with one allreduce
  std::vector<std::size_t> sparse;  // sent as (index, value) pairs with one allgatherv
  std::vector<std::size_t> k;       // per sparse entry: the most pairs a rank sends for it
  // The sparse exchange was planned but would move more bytes than a dense allreduce of the same
  // tensors, so they were moved to `dense` (see Note [When sparse falls back to dense]).
  bool dense_fallback = false;

  bool all_dense() const { return sparse.empty(); }
  void clear() {
    dense_wire = DenseWire::kFloat32;
    sparse_wire = SparseWire::kPairs;
    dense.clear();
    sparse.clear();
    k.clear();
    dense_fallback = false;
  }
};

}  // namespace gw::compressors
