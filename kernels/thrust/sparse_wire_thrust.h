// The device algorithms of kernels/sparse_wire.h, written once with Thrust as templates over the
// execution policy (Note [One algorithm source], kernels/thrust/sparse_thrust.h): the blocks of
// kernels/thrust/wire_block.h, one per element of a for_each, placed by an inclusive scan of their
// sizes (Note [Compact sparse wire]). Internal to kernels/: kernels/cuda/sparse_wire.cu
// instantiates them on a CUDA stream, tests/kernels/thrust_omp_test.cc under OpenMP.
#pragma once

#include <thrust/find.h>
#include <thrust/for_each.h>
#include <thrust/functional.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/transform.h>

#include <cstddef>
#include <cstdint>

#include "kernels/host_device.h"
#include "kernels/sparse_wire.h"
#include "kernels/thrust/wire_block.h"

namespace gw::kernels::thrust_algo {

namespace wire_ops {

// One value back to the host, in the policy's order (a one-element reduction, which waits).
template <class Policy, class T>
T read_value(const Policy& policy, const T* p) {
  return thrust::reduce(policy, p, p + 1, T{0}, thrust::maximum<T>());
}

struct WidthOp {
  const std::uint32_t* indices;
  std::size_t c;
  GW_HOST_DEVICE std::uint64_t operator()(std::size_t b) const {
    return wire::block_width(indices, c, b);
  }
};

struct SizeFromWidthsOp {
  const std::uint64_t* widths;
  std::size_t c;
  std::uint32_t bits;
  GW_HOST_DEVICE std::uint64_t operator()(std::size_t b) const {
    return wire::block_words(wire::block_pairs(c, b), static_cast<std::uint32_t>(widths[b]), bits);
  }
};

// words[t], t < 2 + table: the header, then the width table.
struct HeaderOp {
  const std::uint64_t* widths;
  std::size_t c, nb, block_total;
  std::uint32_t* words;
  GW_HOST_DEVICE void operator()(std::size_t t) const {
    if (t == 0) {
      words[0] = static_cast<std::uint32_t>(c);
    } else if (t == 1) {
      words[1] = static_cast<std::uint32_t>(block_total);
    } else {
      std::uint32_t word = 0;
      const std::size_t first = 4 * (t - 2);
      for (std::size_t i = 0; i < 4 && first + i < nb; ++i) {
        word |= static_cast<std::uint32_t>(widths[first + i]) << (8 * i);
      }
      words[t] = word;
    }
  }
};

struct EncodeBlockOp {
  const std::uint32_t* indices;
  std::size_t c;
  const float* v;
  const std::uint64_t* widths;
  const std::uint64_t* ends;
  std::uint32_t bits;
  std::uint32_t* blocks;
  GW_HOST_DEVICE void operator()(std::size_t b) const {
    wire::encode_block(indices, c, b, v, static_cast<std::uint32_t>(widths[b]), bits,
                       blocks + (b == 0 ? 0 : ends[b - 1]));
  }
};

struct WireErrorOp {
  float* x;
  GW_HOST_DEVICE void operator()(std::uint32_t i) const { x[i] = wire::wire_error(x[i]); }
};

struct BlockErrorOp {
  float* x;
  const std::uint32_t* indices;
  std::size_t c;
  std::uint32_t bits;
  GW_HOST_DEVICE void operator()(std::size_t b) const {
    wire::keep_block_error(x, indices, c, b, bits);
  }
};

struct BadWidthOp {
  const std::uint32_t* table;
  std::size_t nb;
  GW_HOST_DEVICE bool operator()(std::size_t t) const {
    const std::uint32_t w = wire::width_byte(table, t);
    return t < nb ? w > 32 : w != 0;
  }
};

struct SizeFromTableOp {
  const std::uint32_t* table;
  std::size_t c;
  std::uint32_t bits;
  GW_HOST_DEVICE std::uint64_t operator()(std::size_t b) const {
    return wire::block_words(wire::block_pairs(c, b), wire::width_byte(table, b), bits);
  }
};

struct SpanOp {
  const std::uint32_t* table;
  const std::uint32_t* blocks;
  const std::uint64_t* ends;
  std::size_t c;
  GW_HOST_DEVICE std::uint64_t operator()(std::size_t b) const {
    return wire::block_span(blocks + (b == 0 ? 0 : ends[b - 1]), wire::block_pairs(c, b),
                            wire::width_byte(table, b));
  }
};

struct DecodeBlockOp {
  const std::uint32_t* table;
  const std::uint32_t* blocks;
  const std::uint64_t* ends;
  const std::uint64_t* span_ends;
  std::size_t c;
  std::uint32_t bits;
  std::uint32_t* pairs;
  GW_HOST_DEVICE void operator()(std::size_t b) const {
    wire::decode_block(blocks + (b == 0 ? 0 : ends[b - 1]), wire::block_pairs(c, b),
                       wire::width_byte(table, b), bits, b == 0 ? 0 : span_ends[b - 1],
                       pairs + 2 * b * kWireBlockPairs);
  }
};

struct IndexAtLeastOp {
  const std::uint32_t* pairs;
  std::size_t numel;
  GW_HOST_DEVICE bool operator()(std::size_t j) const { return pairs[2 * j] >= numel; }
};

struct NonFiniteValueOp {
  const std::uint32_t* pairs;
  GW_HOST_DEVICE bool operator()(std::size_t j) const {
    return !wire::value_finite(pairs[2 * j + 1]);
  }
};

}  // namespace wire_ops

template <class Policy>
std::size_t encode_wire(const Policy& policy, const std::uint32_t* indices, std::size_t count,
                        const float* v, std::uint32_t* words, std::uint64_t* scratch,
                        std::uint32_t bits = kWireHalfBits) {
  using namespace wire_ops;
  const std::size_t nb = wire_blocks(count), table = (nb + 3) / 4;
  const thrust::counting_iterator<std::size_t> first(0);
  std::uint64_t* widths = scratch;
  std::uint64_t* ends = scratch + nb;
  std::size_t block_total = 0;
  if (nb > 0) {
    thrust::transform(policy, first, first + nb, widths, WidthOp{indices, count});
    thrust::transform(policy, first, first + nb, ends, SizeFromWidthsOp{widths, count, bits});
    thrust::inclusive_scan(policy, ends, ends + nb, ends);
    block_total = static_cast<std::size_t>(read_value(policy, ends + (nb - 1)));
  }
  thrust::for_each(policy, first, first + 2 + table,
                   HeaderOp{widths, count, nb, block_total, words});
  if (nb > 0) {
    thrust::for_each(policy, first, first + nb,
                     EncodeBlockOp{indices, count, v, widths, ends, bits, words + 2 + table});
  }
  return 2 + table + block_total;
}

template <class Policy>
void keep_wire_error_at(const Policy& policy, float* x, const std::uint32_t* indices,
                        std::size_t count, std::uint32_t bits = kWireHalfBits) {
  if (count == 0) return;
  if (bits != kWireHalfBits) {
    const thrust::counting_iterator<std::size_t> first(0);
    thrust::for_each(policy, first, first + wire_blocks(count),
                     wire_ops::BlockErrorOp{x, indices, count, bits});
    return;
  }
  thrust::for_each(policy, indices, indices + count, wire_ops::WireErrorOp{x});
}

template <class Policy>
WireCheck decode_wire(const Policy& policy, const std::uint32_t* words, std::size_t available,
                      std::size_t numel, std::size_t max_pairs, bool finite_values_only,
                      std::uint32_t* pairs, std::uint64_t* scratch,
                      std::uint32_t bits = kWireHalfBits) {
  using namespace wire_ops;
  WireCheck check;
  if (available < 2) {
    check.problem = WireProblem::kTruncated;
    check.words = 2;
    return check;
  }
  const std::size_t c = read_value(policy, words), declared = read_value(policy, words + 1);
  const std::size_t nb = wire_blocks(c), table = (nb + 3) / 4;
  if (!wire::header_ok(c, declared, available, max_pairs, check)) return check;
  if (c == 0) {
    if (declared != 0) {
      check.problem = WireProblem::kWrongBlockWords;
      check.value = declared;
    }
    return check;
  }
  const std::uint32_t* table_words = words + 2;
  const std::uint32_t* blocks = words + 2 + table;
  const thrust::counting_iterator<std::size_t> first(0);
  const auto bad = thrust::find_if(policy, first, first + 4 * table, BadWidthOp{table_words, nb});
  if (bad != first + 4 * table) {
    const auto t = static_cast<std::size_t>(bad - first);
    check.problem = WireProblem::kBadWidth;
    check.position = t;
    check.value = (read_value(policy, table_words + t / 4) >> (8 * (t % 4))) & 0xffu;
    return check;
  }
  std::uint64_t* ends = scratch;
  std::uint64_t* span_ends = scratch + nb;
  thrust::transform(policy, first, first + nb, ends, SizeFromTableOp{table_words, c, bits});
  thrust::inclusive_scan(policy, ends, ends + nb, ends);
  const std::uint64_t total = read_value(policy, ends + (nb - 1));
  if (total != declared) {
    check.problem = WireProblem::kWrongBlockWords;
    check.value = declared;
    check.expected = total;
    return check;
  }
  thrust::transform(policy, first, first + nb, span_ends, SpanOp{table_words, blocks, ends, c});
  thrust::inclusive_scan(policy, span_ends, span_ends + nb, span_ends);
  thrust::for_each(policy, first, first + nb,
                   DecodeBlockOp{table_words, blocks, ends, span_ends, c, bits, pairs});
  const auto out = thrust::find_if(policy, first, first + c, IndexAtLeastOp{pairs, numel});
  if (out != first + c) {
    check.problem = WireProblem::kIndexOutOfRange;
    check.position = static_cast<std::size_t>(out - first);
    check.value = read_value(policy, pairs + 2 * check.position);
    return check;
  }
  if (finite_values_only) {
    const auto nan = thrust::find_if(policy, first, first + c, NonFiniteValueOp{pairs});
    if (nan != first + c) {
      check.problem = WireProblem::kNonFiniteValue;
      check.position = static_cast<std::size_t>(nan - first);
      check.value =
          wire::half_bits(wire::bits_float(read_value(policy, pairs + 2 * check.position + 1)));
    }
  }
  return check;
}

}  // namespace gw::kernels::thrust_algo
