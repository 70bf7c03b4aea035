// The checkpoint loader of gradwire_train (reference_trainer/app/checkpoint.h) on arbitrary bytes.
//
// The input's first byte says how the rest is used:
// - even: the rest is the file as it is. Nearly every mutation of it fails at the first checks
//   (magic, version, total length, CRC-32), as a truncated, corrupt or foreign file does;
// - odd: the rest with its total length field (bytes 16..23) and its CRC-32 trailer rewritten to
//   match it, as a forger would, so that mutations reach the section parser behind those checks.
// Invariants:
// - every refusal is a CheckpointError; nothing else escapes (std::bad_alloc included);
// - nothing allocates much more than the input holds (-malloc_limit_mb in CMakeLists.txt, far
//   below what a forged count or length could ask for);
// - what is accepted serializes back to the very bytes it was parsed from, and parses again to
//   the same sections.
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz_check.h"
#include "reference_trainer/app/checkpoint.h"

using gw::fuzz::fail;
namespace gt = gw::trainer;

namespace {

// The header's total length field and the trailer (Note [Checkpoint format]).
constexpr std::size_t kLengthAt = 16;
constexpr std::size_t kHeaderBytes = 24;
constexpr std::size_t kTrailerBytes = 4;

void make_length_and_checksum_match(std::string& bytes) {
  if (bytes.size() < kHeaderBytes + kTrailerBytes) return;
  const std::uint64_t length = bytes.size();
  std::memcpy(&bytes[kLengthAt], &length, sizeof length);
  const std::size_t body = bytes.size() - kTrailerBytes;
  const auto crc = static_cast<std::uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(body)));
  std::memcpy(&bytes[body], &crc, sizeof crc);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 1) make_length_and_checksum_match(bytes);

  gt::Checkpoint checkpoint;
  try {
    checkpoint = gt::parse_checkpoint(bytes);
  } catch (const gt::CheckpointError&) {
    return 0;
  }
  std::string again;
  try {
    again = gt::serialize_checkpoint(checkpoint);
  } catch (const gt::CheckpointError& e) {
    fail(std::string("an accepted checkpoint does not serialize: ") + e.what());
  }
  if (again != bytes) {
    fail("an accepted checkpoint of " + std::to_string(bytes.size()) +
         " bytes serializes to " + std::to_string(again.size()) + " other bytes");
  }
  if (gt::checkpoint_sections(gt::parse_checkpoint(again)) != gt::checkpoint_sections(checkpoint)) {
    fail("an accepted checkpoint parses to other sections the second time");
  }
  return 0;
}
