#include "kernels/sparse_wire.h"

#include <stdexcept>
#include <string>

#include "kernels/cpu/sparse_wire_cpu.h"
#include "kernels/cuda/sparse_wire_cuda.h"

namespace gw::kernels {

const char* to_string(WireProblem problem) {
  switch (problem) {
    case WireProblem::kNone:
      return "none";
    case WireProblem::kTruncated:
      return "cut short";
    case WireProblem::kTooManyPairs:
      return "too many pairs";
    case WireProblem::kBadWidth:
      return "a gap width above 32, or a width byte after the last block that is not 0";
    case WireProblem::kWrongBlockWords:
      return "a block length that is not what its widths give";
    case WireProblem::kIndexOutOfRange:
      return "an index out of range";
    case WireProblem::kNonFiniteValue:
      return "a value that is not finite";
  }
  return "?";
}

namespace {
void check_value_bits(const char* function, std::uint32_t bits) {
  if (!wire_value_bits_ok(bits)) {
    throw std::invalid_argument(std::string("gw::kernels::") + function + ": value_bits " +
                                std::to_string(bits) + "; the compact wire carries 16, 4 or 2");
  }
}
}  // namespace

std::size_t encode_wire(const std::uint32_t* indices, std::size_t count, const float* v,
                        std::uint32_t* words, std::uint64_t* scratch, const Stream& stream,
                        std::uint32_t value_bits) {
  check_value_bits("encode_wire", value_bits);
  if (wire_max_words(count) > 0xffffffffu) {
    throw std::invalid_argument("gw::kernels::encode_wire: " + std::to_string(count) +
                                " pairs; a segment's length must fit 32 bits, so at most " +
                                std::to_string(std::size_t{0xffffffffu} / 49 * 32) + " pairs");
  }
  if (stream.is_host()) return cpu::encode_wire(indices, count, v, words, scratch, value_bits);
  return cuda::encode_wire(indices, count, v, words, scratch, stream.native(), value_bits);
}

void keep_wire_error_at(float* x, const std::uint32_t* indices, std::size_t count,
                        const Stream& stream, std::uint32_t value_bits) {
  check_value_bits("keep_wire_error_at", value_bits);
  if (stream.is_host()) return cpu::keep_wire_error_at(x, indices, count, value_bits);
  cuda::keep_wire_error_at(x, indices, count, stream.native(), value_bits);
}

WireCheck decode_wire(const std::uint32_t* words, std::size_t available, std::size_t numel,
                      std::size_t max_pairs, bool finite_values_only, std::uint32_t* pairs,
                      std::uint64_t* scratch, const Stream& stream, std::uint32_t value_bits) {
  check_value_bits("decode_wire", value_bits);
  if (numel > 0xffffffffu) {
    throw std::invalid_argument("gw::kernels::decode_wire: a tensor of " + std::to_string(numel) +
                                " elements; indices are 32 bits, so at most 2^32 - 1");
  }
  if (stream.is_host()) {
    return cpu::decode_wire(words, available, numel, max_pairs, finite_values_only, pairs, scratch,
                            value_bits);
  }
  return cuda::decode_wire(words, available, numel, max_pairs, finite_values_only, pairs, scratch,
                           stream.native(), value_bits);
}

}  // namespace gw::kernels
