// The compact sparse wire on the host: the blocks of kernels/thrust/wire_block.h visited in order
// (Note [Compact sparse wire]).
#include "kernels/cpu/sparse_wire_cpu.h"

#include "kernels/thrust/wire_block.h"

namespace gw::kernels::cpu {

std::size_t encode_wire(const std::uint32_t* indices, std::size_t count, const float* v,
                        std::uint32_t* words, std::uint64_t* scratch, std::uint32_t bits) {
  const std::size_t nb = wire_blocks(count), table = (nb + 3) / 4;
  std::uint64_t* widths = scratch;
  std::size_t block_total = 0;
  for (std::size_t b = 0; b < nb; ++b) {
    widths[b] = wire::block_width(indices, count, b);
    block_total +=
        wire::block_words(wire::block_pairs(count, b), static_cast<std::uint32_t>(widths[b]), bits);
  }
  words[0] = static_cast<std::uint32_t>(count);
  words[1] = static_cast<std::uint32_t>(block_total);
  for (std::size_t t = 0; t < table; ++t) {
    std::uint32_t word = 0;
    for (std::size_t i = 0; i < 4 && 4 * t + i < nb; ++i) {
      word |= static_cast<std::uint32_t>(widths[4 * t + i]) << (8 * i);
    }
    words[2 + t] = word;
  }
  std::uint32_t* out = words + 2 + table;
  for (std::size_t b = 0; b < nb; ++b) {
    const auto w = static_cast<std::uint32_t>(widths[b]);
    wire::encode_block(indices, count, b, v, w, bits, out);
    out += wire::block_words(wire::block_pairs(count, b), w, bits);
  }
  return 2 + table + block_total;
}

void keep_wire_error_at(float* x, const std::uint32_t* indices, std::size_t count,
                        std::uint32_t bits) {
  if (bits != kWireHalfBits) {
    for (std::size_t b = 0; b < wire_blocks(count); ++b) {
      wire::keep_block_error(x, indices, count, b, bits);
    }
    return;
  }
  for (std::size_t j = 0; j < count; ++j) x[indices[j]] = wire::wire_error(x[indices[j]]);
}

WireCheck decode_wire(const std::uint32_t* words, std::size_t available, std::size_t numel,
                      std::size_t max_pairs, bool finite_values_only, std::uint32_t* pairs,
                      std::uint64_t* scratch, std::uint32_t bits) {
  WireCheck check;
  if (available < 2) {
    check.problem = WireProblem::kTruncated;
    check.words = 2;
    return check;
  }
  const std::size_t c = words[0], declared = words[1];
  const std::size_t nb = wire_blocks(c), table = (nb + 3) / 4;
  if (!wire::header_ok(c, declared, available, max_pairs, check)) return check;
  const std::uint32_t* table_words = words + 2;
  std::uint64_t* ends = scratch;  // each block's end, in words after the table
  std::size_t total = 0;
  for (std::size_t t = 0; t < 4 * table; ++t) {
    const std::uint32_t w = wire::width_byte(table_words, t);
    if ((t < nb && w > 32) || (t >= nb && w != 0)) {
      check.problem = WireProblem::kBadWidth;
      check.position = t;
      check.value = w;
      return check;
    }
    if (t < nb) {
      total += wire::block_words(wire::block_pairs(c, t), w, bits);
      ends[t] = total;
    }
  }
  if (total != declared) {
    check.problem = WireProblem::kWrongBlockWords;
    check.value = declared;
    check.expected = total;
    return check;
  }
  const std::uint32_t* blocks = words + 2 + table;
  std::uint64_t base = 0;
  for (std::size_t b = 0; b < nb; ++b) {
    const std::uint32_t* in = blocks + (b == 0 ? 0 : ends[b - 1]);
    const std::uint32_t w = wire::width_byte(table_words, b);
    const std::size_t n = wire::block_pairs(c, b);
    base = wire::decode_block(in, n, w, bits, base, pairs + 2 * b * kWireBlockPairs);
  }
  for (std::size_t j = 0; j < c; ++j) {
    if (pairs[2 * j] >= numel) {
      check.problem = WireProblem::kIndexOutOfRange;
      check.position = j;
      check.value = pairs[2 * j];
      return check;
    }
  }
  if (finite_values_only) {
    for (std::size_t j = 0; j < c; ++j) {
      if (!wire::value_finite(pairs[2 * j + 1])) {
        check.problem = WireProblem::kNonFiniteValue;
        check.position = j;
        check.value = wire::half_bits(wire::bits_float(pairs[2 * j + 1]));
        return check;
      }
    }
  }
  return check;
}

}  // namespace gw::kernels::cpu
