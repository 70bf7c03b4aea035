// A peer's compact sparse segment through kernels::decode_wire on the host (kernels/sparse_wire.h,
// Note [Compact sparse wire]).
//
// The input is little-endian 32-bit words:
//   numel           the tensor's elements (any 32-bit value)
//   max pairs       w % 4096
//   the segment     every word after them; `available` is their count
// The segment, the pairs buffer (2 x max pairs words) and the scratch are each exactly as long as
// the API says, so a read or write past any of them is an AddressSanitizer finding.
// Invariants, against a reference decoder written here for clarity (a sequential bit reader):
// - decode_wire finds the same first flaw, at the same position with the same value, or accepts
//   exactly what the reference accepts, with the same length;
// - an accepted segment decodes to the reference's pairs: strictly ascending indices below numel,
//   and each value the binary16 the segment carries (as the compiler converts it; NaN for NaN).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "kernels/sparse_wire.h"
#include "kernels/stream.h"

using gw::fuzz::check;
using gw::fuzz::fail;
namespace gk = gw::kernels;

namespace {

struct Reference {
  gk::WireCheck check;
  std::vector<std::uint64_t> indices;
  std::vector<std::uint16_t> halves;
};

// Bit `bit` onwards, `width` bits (1 to 32), least significant first, of words[from...].
std::uint64_t read_bits(const std::vector<std::uint32_t>& words, std::size_t from,
                        std::uint64_t bit, std::uint32_t width) {
  std::uint64_t value = 0;
  for (std::uint32_t i = 0; i < width; ++i) {
    const std::uint64_t b = bit + i;
    value |= static_cast<std::uint64_t>((words[from + b / 32] >> (b % 32)) & 1u) << i;
  }
  return value;
}

Reference reference(const std::vector<std::uint32_t>& words, std::size_t numel,
                    std::size_t max_pairs) {
  Reference ref;
  gk::WireCheck& c = ref.check;
  if (words.size() < 2) {
    c.problem = gk::WireProblem::kTruncated;
    c.words = 2;
    return ref;
  }
  const std::size_t pairs = words[0], declared = words[1];
  const std::size_t blocks = (pairs + 31) / 32, table = (blocks + 3) / 4;
  c.pairs = pairs;
  c.words = 2 + table + declared;
  if (pairs > max_pairs) {
    c.problem = gk::WireProblem::kTooManyPairs;
    c.value = pairs;
    return ref;
  }
  if (c.words > words.size()) {
    c.problem = gk::WireProblem::kTruncated;
    return ref;
  }
  std::vector<std::uint32_t> width(blocks);
  std::size_t total = 0;
  for (std::size_t t = 0; t < 4 * table; ++t) {
    const std::uint32_t byte = (words[2 + t / 4] >> (8 * (t % 4))) & 0xffu;
    if (t < blocks ? byte > 32 : byte != 0) {
      c.problem = gk::WireProblem::kBadWidth;
      c.position = t;
      c.value = byte;
      return ref;
    }
    if (t < blocks) {
      width[t] = byte;
      const std::size_t n = std::min<std::size_t>(32, pairs - 32 * t);
      total += (n * byte + 31) / 32 + (n + 1) / 2;
    }
  }
  if (total != declared) {
    c.problem = gk::WireProblem::kWrongBlockWords;
    c.value = declared;
    c.expected = total;
    return ref;
  }
  std::size_t at = 2 + table;
  std::uint64_t next = 0;
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t n = std::min<std::size_t>(32, pairs - 32 * b);
    const std::size_t gap_words = (n * width[b] + 31) / 32;
    for (std::size_t j = 0; j < n; ++j) {
      const std::uint64_t gap = width[b] == 0 ? 0 : read_bits(words, at, j * width[b], width[b]);
      ref.indices.push_back(next + gap);
      next = next + gap + 1;
      ref.halves.push_back(
          static_cast<std::uint16_t>(words[at + gap_words + j / 2] >> (16 * (j % 2))));
    }
    at += gap_words + (n + 1) / 2;
  }
  for (std::size_t j = 0; j < pairs; ++j) {
    if (ref.indices[j] >= numel) {
      c.problem = gk::WireProblem::kIndexOutOfRange;
      c.position = j;
      c.value = std::min<std::uint64_t>(ref.indices[j], 0xffffffffu);
      return ref;
    }
  }
  return ref;
}

// The compiler's binary16 (clang before 15 calls it __fp16).
#if defined(__clang__) && __clang_major__ < 15
using Binary16 = __fp16;
#else
using Binary16 = _Float16;
#endif

float half_as_float(std::uint16_t h) {
  Binary16 x;
  std::memcpy(&x, &h, sizeof x);
  return static_cast<float>(x);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::uint32_t> in(size / 4);
  for (std::size_t i = 0; i < in.size(); ++i) {
    in[i] = std::uint32_t{data[4 * i]} | std::uint32_t{data[4 * i + 1]} << 8 |
            std::uint32_t{data[4 * i + 2]} << 16 | std::uint32_t{data[4 * i + 3]} << 24;
  }
  if (in.size() < 2) return 0;
  const std::size_t numel = in[0], max_pairs = in[1] % 4096;
  const std::vector<std::uint32_t> segment(in.begin() + 2, in.end());
  std::vector<std::uint32_t> pairs(2 * max_pairs);
  std::vector<std::uint64_t> scratch(gk::wire_scratch(max_pairs));
  const gk::WireCheck got = gk::decode_wire(segment.data(), segment.size(), numel, max_pairs, false,
                                            pairs.data(), scratch.data(), gk::Stream::host());
  const Reference ref = reference(segment, numel, max_pairs);
  const gk::WireCheck& want = ref.check;
  if (got.problem != want.problem || got.position != want.position || got.value != want.value ||
      got.expected != want.expected || got.pairs != want.pairs || got.words != want.words) {
    fail(std::string("decode_wire found '") + gk::to_string(got.problem) + "' at " +
         std::to_string(got.position) + " (value " + std::to_string(got.value) +
         "), the reference '" + gk::to_string(want.problem) + "' at " +
         std::to_string(want.position) + " (value " + std::to_string(want.value) + ")");
  }
  if (!got.ok()) return 0;
  for (std::size_t j = 0; j < got.pairs; ++j) {
    check(pairs[2 * j] == ref.indices[j], "a decoded index is not the reference's");
    check(j == 0 || pairs[2 * j] > pairs[2 * j - 2], "decoded indices do not ascend");
    float value;
    std::memcpy(&value, &pairs[2 * j + 1], sizeof value);
    const float want_value = half_as_float(ref.halves[j]);
    check(std::isnan(want_value) ? std::isnan(value)
                                 : std::memcmp(&value, &want_value, sizeof value) == 0,
          "a decoded value is not the binary16 the segment carries");
  }
  return 0;
}
