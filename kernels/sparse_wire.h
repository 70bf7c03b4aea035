// The compact wire of a sparse message: one tensor's ascending (index, value) pairs as gap-coded
// indices in blocks and binary16 values, encoded and decoded (with every check) on a Stream.
//
// Note [Compact sparse wire]
// The pairs format (Note [Sparse message format], compressors/sparse_message.h) spends 8 bytes on
// each sent element: a 32-bit index and a 32-bit value. The compact segment of one tensor, in
// 32-bit words, spends about 3.7 (a block of 32 pairs with 13-bit gaps: 29 words and a quarter):
//   word 0      c, the pairs;
//   word 1      B, the words of the blocks (after the width table);
//   width table ceil(nb / 4) words, nb = ceil(c / 32) blocks: byte b (bits 8(b mod 4) and up of
//               word b / 4) is block b's gap width w_b, 0 to 32; the bytes after the last block
//               are 0;
//   blocks      block b holds pairs 32b .. 32b + n_b - 1 (n_b = 32, the last one c - 32(nb - 1)):
//               first their gaps g_j = index_j - index_{j-1} - 1 (index_{-1} = -1, so g_0 is the
//               first index), w_b bits each, least significant bit first across the block's
//               ceil(n_b w_b / 32) words (a gap may straddle two words); w_b is the fewest bits
//               that hold the block's largest gap (0 when every gap is 0: no words). Then the n_b
//               values, binary16, two to a word (the even pair in the low half; an odd last half
//               leaves the high half 0): ceil(n_b / 2) words.
// So a segment is 2 + ceil(nb / 4) + B words, B = sum over blocks of ceil(n_b w_b / 32) +
// ceil(n_b / 2), at most 48 per block. Coding gaps, not indices, makes every index above the one
// before by construction: a decoded segment is strictly ascending whatever its bits say, so a
// receiver needs to check only lengths, widths and the range (and, if asked, the values).
// Values: the binary16 of the value rounded to nearest even, a finite value first clamped to
// +-65504 (the largest finite binary16), so no finite gradient becomes an infinity; an infinity or
// a NaN is sent as itself (an overflow the AMP check must see). What the rounding and the clamp
// drop is kept by the sender (keep_wire_error_at): error feedback covers the quantisation too,
// and nothing is lost, only sent later.
// Blocks make the coding parallel: a block's width, size and index span depend on its own pairs
// only, so a device computes them per block and places blocks by a prefix sum (encode), and finds
// each block's first index by a prefix sum of the spans (decode); within a block the work is a
// loop of at most 32 steps.
//
// Note [Low-bit wire values]
// With value_bits 4 or 2 (GRADWIRE_SPARSE_WIRE=compact4, compact2) a block's values are a scale
// and a b-bit code each instead of binary16 (the gap coding is the same): after the gap words,
// one word holding the scale s as a float, then the n_b codes, b bits each, least significant
// first, 32 / b to a word (the bits after the last code 0): 1 + ceil(n_b b / 32) words, 5 (4 bits)
// or 3 (2 bits) for a full block against binary16's 16. s is the largest |value| of the block
// (NaN above infinity, so a non-finite value makes s non-finite). The code is a uniform mid-rise
// quantiser of [-s, s] in 2^b cells: code q = floor(v / s x 2^(b-1)) + 2^(b-1), clamped to
// [0, 2^b - 1], stands for s (q - 2^(b-1) + 1/2) / 2^(b-1), the centre of its cell, so the error
// is at most s / 2^b (s / 4 at 2 bits, s / 16 at 4) and never is a value decoded as 0 unless s is
// 0. A block with a non-finite s decodes to non-finite values (s times a nonzero level), each
// value's sign kept: an overflow the AMP check must see. As with binary16, what the code drops
// stays with the sender (keep_wire_error_at, block by block with the same scales, so it must be
// given the same indices in the same segments as encode_wire), so error feedback carries the
// quantisation too: SparseLoCo's recipe (top-k, low-bit values, error feedback). Every step is
// a correctly rounded float operation (kernels/thrust/float_ops.h), so host and device agree bit
// for bit.
//
// Each primitive runs on the Stream given last (Note [Streams]): the host (kernels/cpu) or a CUDA
// stream (kernels/thrust/sparse_wire_thrust.h; Note [One algorithm source]). The words are
// bit-identical on both. Pointers are memory where the stream works. On a CUDA stream in a build
// without CUDA every primitive throws std::runtime_error.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/stream.h"

namespace gw::kernels {

inline constexpr std::size_t kWireBlockPairs = 32;

// Blocks of `count` pairs: ceil(count / 32).
constexpr std::size_t wire_blocks(std::size_t count) {
  return (count + kWireBlockPairs - 1) / kWireBlockPairs;
}
// The bits a value takes on the compact wire: 16 (binary16), or 4 or 2 with a scale per block
// (Note [Low-bit wire values]).
inline constexpr std::uint32_t kWireHalfBits = 16;
constexpr bool wire_value_bits_ok(std::uint32_t bits) {
  return bits == kWireHalfBits || bits == 4 || bits == 2;
}
// The value words of a block of n pairs.
constexpr std::size_t wire_value_words(std::size_t n, std::uint32_t bits) {
  return bits == kWireHalfBits ? (n + 1) / 2 : 1 + (n * bits + 31) / 32;
}
// The most words a segment of `count` pairs can take (every gap 32 bits wide).
constexpr std::size_t wire_max_words(std::size_t count, std::uint32_t bits = kWireHalfBits) {
  return 2 + (wire_blocks(count) + 3) / 4 +
         (32 + wire_value_words(kWireBlockPairs, bits)) * wire_blocks(count);
}
// The 64-bit scratch elements encode_wire and decode_wire need for `count` pairs.
constexpr std::size_t wire_scratch(std::size_t count) { return 2 * wire_blocks(count); }

// value_bits below is 16 (binary16 values), 4 or 2 (Note [Low-bit wire values]); any other
// throws std::invalid_argument.

// Writes the segment of the `count` pairs (indices[j], v[indices[j]]), indices strictly
// ascending (what the selectors write; not checked), to words (room for
// wire_max_words(count, value_bits)) and returns its length in words. scratch has room for
// wire_scratch(count). Synchronises. Throws std::invalid_argument for more pairs than a 32-bit
// length can hold (about 2.8e9).
std::size_t encode_wire(const std::uint32_t* indices, std::size_t count, const float* v,
                        std::uint32_t* words, std::uint64_t* scratch, const Stream& stream,
                        std::uint32_t value_bits = kWireHalfBits);

// x[indices[j]] -= the value the wire carries for it, j < count (the segment encode_wire writes
// for these indices and x): what rounding to binary16 and the clamp, or the low-bit code, dropped
// stays in x (the sender's residual); a value sent as an infinity or a NaN leaves 0 (as after a
// send in the pairs format). indices unique.
void keep_wire_error_at(float* x, const std::uint32_t* indices, std::size_t count,
                        const Stream& stream, std::uint32_t value_bits = kWireHalfBits);

// What decode_wire found wrong with a received segment, the first of: a header cut short, too
// many pairs, a segment cut short, a bad width, a wrong block length, an index out of range, a
// non-finite value.
enum class WireProblem {
  kNone,
  kTruncated,        // the header, or the segment it announces, runs past `available` words
  kTooManyPairs,     // c > max_pairs (value: c)
  kBadWidth,         // width byte `position` is above 32, or a byte after the last block is not 0
                     // (value: the byte)
  kWrongBlockWords,  // B is not what the widths give (value: B; expected: what they give)
  kIndexOutOfRange,  // pair `position` has an index >= numel (value: the index, or 2^32 - 1 when
                     // it would not fit 32 bits)
  kNonFiniteValue,   // pair `position` carries an infinity or a NaN (value: its binary16 bits),
                     // when the caller asked for finite values only; on a low-bit wire a block
                     // whose scale is not finite
};
const char* to_string(WireProblem problem);

struct WireCheck {
  WireProblem problem = WireProblem::kNone;
  std::size_t pairs = 0;     // c (once the header could be read)
  std::size_t words = 0;     // the segment's length (once the header could be read)
  std::size_t position = 0;  // the bad width byte or pair
  std::uint64_t value = 0;
  std::uint64_t expected = 0;
  bool ok() const { return problem == WireProblem::kNone; }
};

// Checks the segment at words[0..available) of a tensor of numel elements, and when it is well
// formed decodes its pairs to pairs[0..2c) as (index, float bits), ascending, as pack_pairs writes
// them (for scatter_add_pairs). pairs has room for 2 * max_pairs words, scratch for
// wire_scratch(max_pairs). Nothing but pairs and scratch is written, also for a bad segment.
// Synchronises.
WireCheck decode_wire(const std::uint32_t* words, std::size_t available, std::size_t numel,
                      std::size_t max_pairs, bool finite_values_only, std::uint32_t* pairs,
                      std::uint64_t* scratch, const Stream& stream,
                      std::uint32_t value_bits = kWireHalfBits);

}  // namespace gw::kernels
