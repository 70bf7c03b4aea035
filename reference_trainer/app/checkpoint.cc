#include "reference_trainer/app/checkpoint.h"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <set>
#include <type_traits>

#include "reference_trainer/app/checkpoint_bytes.h"
#include "reference_trainer/app/checkpoint_figures.h"

namespace gw::trainer {
namespace {

// See Note [Checkpoint format]: the file is the host's bytes, and those must be little-endian.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the checkpoint format is little-endian (Note [Checkpoint format])");
static_assert(sizeof(float) == 4 && sizeof(double) == 8, "IEEE 754 binary32 and binary64");

constexpr char kMagic[8] = {'G', 'W', 'C', 'K', 'P', 'T', '\r', '\n'};
constexpr std::uint32_t kVersion = 2;
constexpr std::uint32_t kSectionCount = 6;
constexpr std::size_t kHeaderBytes = 8 + 4 + 4 + 8;
constexpr std::size_t kSectionHeaderBytes = 4 + 8;
constexpr std::size_t kTrailerBytes = 4;
constexpr std::size_t kMinBytes =
    kHeaderBytes + kSectionCount * kSectionHeaderBytes + kTrailerBytes;

[[noreturn]] void fail(const std::string& message) { checkpoint_fail(message); }

std::uint32_t crc32_of(const char* data, std::size_t n) {
  // zlib takes 32-bit lengths: feed it in chunks.
  uLong crc = ::crc32(0L, Z_NULL, 0);
  while (n > 0) {
    const auto chunk = static_cast<uInt>(std::min<std::size_t>(n, 1u << 30));
    crc = ::crc32(crc, reinterpret_cast<const Bytef*>(data), chunk);
    data += chunk;
    n -= chunk;
  }
  return static_cast<std::uint32_t>(crc);
}

std::string hex(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

// ---- the sections ----

void check_meta(const Checkpoint& c, const std::string& where) {
  const auto bad = [&](const std::string& what) { fail(where + what); };
  if (c.world_size < 1) bad("world size 0");
  if (c.rank >= c.world_size) {
    bad("rank " + std::to_string(c.rank) + " in a world of " + std::to_string(c.world_size));
  }
  if (c.steps_per_epoch < 1) bad("0 steps per epoch");
  if (c.steps_per_epoch > static_cast<std::uint64_t>(INT64_MAX))
    bad("steps per epoch out of range");
  if (c.epoch < 1 || c.steps < 0 || c.step_in_epoch >= c.steps_per_epoch) {
    bad("position out of range (step " + std::to_string(c.steps) + ", epoch " +
        std::to_string(c.epoch) + ", step " + std::to_string(c.step_in_epoch) + " of " +
        std::to_string(c.steps_per_epoch) + " in it)");
  }
  const auto per_epoch = static_cast<std::int64_t>(c.steps_per_epoch);
  const bool adds_up =
      c.epoch - 1 <= (INT64_MAX - static_cast<std::int64_t>(c.step_in_epoch)) / per_epoch &&
      (c.epoch - 1) * per_epoch + static_cast<std::int64_t>(c.step_in_epoch) == c.steps;
  if (!adds_up) {
    bad("the position does not add up: " + std::to_string(c.steps) + " steps done, but epoch " +
        std::to_string(c.epoch) + " step " + std::to_string(c.step_in_epoch) + " at " +
        std::to_string(c.steps_per_epoch) + " steps per epoch");
  }
}

// "key=value\n" lines with distinct, non-empty keys.
void check_identity(const std::string& text, const std::string& where) {
  std::set<std::string> keys;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = text.find('\n', at);
    if (end == std::string::npos) fail(where + "the last line does not end with a newline");
    const std::string line = text.substr(at, end - at);
    const std::size_t eq = line.find('=');
    if (eq == std::string::npos || eq == 0 || line.find('\0') != std::string::npos) {
      fail(where + "line " + std::to_string(keys.size() + 1) + " is not key=value");
    }
    if (!keys.insert(line.substr(0, eq)).second) {
      fail(where + "the key '" + line.substr(0, eq) + "' appears twice");
    }
    at = end + 1;
  }
}

std::string meta_payload(const Checkpoint& c) {
  CheckpointWriter w;
  w.pod(c.rank);
  w.pod(c.world_size);
  w.pod(c.steps);
  w.pod(c.epoch);
  w.pod(c.step_in_epoch);
  w.pod(c.steps_per_epoch);
  return std::move(w.bytes());
}

std::string parameters_payload(const std::vector<float>& p) {
  CheckpointWriter w;
  w.pod<std::uint64_t>(p.size());
  w.raw(p.data(), p.size() * sizeof(float));
  return std::move(w.bytes());
}

void read_meta(CheckpointReader& r, Checkpoint& c) {
  c.rank = r.pod<std::uint32_t>("the rank");
  c.world_size = r.pod<std::uint32_t>("the world size");
  c.steps = r.pod<std::int64_t>("the step count");
  c.epoch = r.pod<std::int64_t>("the epoch");
  c.step_in_epoch = r.pod<std::uint64_t>("the step in the epoch");
  c.steps_per_epoch = r.pod<std::uint64_t>("the steps per epoch");
  r.expect_end();
  check_meta(c, "section META: ");
}

void read_parameters(CheckpointReader& r, std::vector<float>& p) {
  const auto n = r.count("the parameter count", sizeof(float));
  p.resize(n);
  r.raw(p.data(), n * sizeof(float), "the parameters");
  r.expect_end();
}

// The header and the trailer, checked in the order Note [Checkpoint format] gives: the magic, the
// version, the total length, the section count, the checksum. Returns where the trailer starts.
std::size_t check_frame(const std::string& bytes) {
  const std::size_t size = bytes.size();
  const std::size_t magic_seen = std::min(size, sizeof kMagic);
  if (std::memcmp(bytes.data(), kMagic, magic_seen) != 0) {
    fail("not a gradwire_train checkpoint (it does not start with \"GWCKPT\\r\\n\")");
  }
  if (size < kHeaderBytes) {
    fail("truncated: " + std::to_string(size) + " bytes, shorter than the " +
         std::to_string(kHeaderBytes) + "-byte header");
  }
  CheckpointReader header(bytes, sizeof kMagic, kHeaderBytes, "header");
  const auto version = header.pod<std::uint32_t>("the version");
  if (version != kVersion) {
    fail("format version " + std::to_string(version) + "; this program reads version " +
         std::to_string(kVersion));
  }
  const auto sections = header.pod<std::uint32_t>("the section count");
  const auto total = header.pod<std::uint64_t>("the total length");
  if (total != size) {
    fail(std::string(total > size ? "truncated" : "trailing bytes") + ": the header says " +
         std::to_string(total) + " bytes, the file has " + std::to_string(size));
  }
  if (sections != kSectionCount) {
    fail(std::to_string(sections) + " sections; version " + std::to_string(kVersion) + " has " +
         std::to_string(kSectionCount));
  }
  if (size < kMinBytes) {
    fail("truncated: " + std::to_string(size) + " bytes, fewer than the " +
         std::to_string(kMinBytes) + " of an empty checkpoint");
  }
  const std::size_t body = size - kTrailerBytes;
  std::uint32_t stored = 0;
  std::memcpy(&stored, bytes.data() + body, sizeof stored);
  const std::uint32_t computed = crc32_of(bytes.data(), body);
  if (stored != computed) {
    fail("checksum mismatch (CRC-32 stored " + hex(stored) + ", computed " + hex(computed) +
         "): the file is corrupt");
  }
  return body;
}

// Section `i`'s header at `at`, checked against its expected tag and the bytes before `body`
// ends. Returns where its payload ends.
std::size_t section_end(const std::string& bytes, std::size_t body, std::size_t at,
                        std::uint32_t i) {
  const char* tag = kCheckpointSections[i];
  if (body - at < kSectionHeaderBytes) fail(std::string("section ") + tag + ": header cut short");
  if (std::memcmp(bytes.data() + at, tag, 4) != 0) {
    std::string seen = bytes.substr(at, 4);
    for (char& ch : seen) {
      if (ch < 0x20 || ch > 0x7e) ch = '?';
    }
    fail("section " + std::to_string(i + 1) + " is '" + seen + "', expected '" + tag + "'");
  }
  std::uint64_t length = 0;
  std::memcpy(&length, bytes.data() + at + 4, sizeof length);
  at += kSectionHeaderBytes;
  if (length > body - at) {
    fail(std::string("section ") + tag + " claims " + std::to_string(length) + " bytes, only " +
         std::to_string(body - at) + " are left");
  }
  return at + static_cast<std::size_t>(length);
}

// Section `i`'s payload into `c`.
void read_section(std::uint32_t i, CheckpointReader& r, Checkpoint& c) {
  switch (i) {
    case 0:
      read_meta(r, c);
      break;
    case 1:
      c.identity = r.text(r.left(), "the identity");
      check_identity(c.identity, "section IDEN: ");
      break;
    case 2:
      read_parameters(r, c.parameters);
      break;
    case 3:
      c.optimizer_state = r.text(r.left(), "the optimizer state");
      break;
    case 4:
      read_report(r, c.figures);
      break;
    case 5:
      read_time(r, c.figures);
      break;
  }
}

}  // namespace

std::vector<std::pair<std::string, std::string>> checkpoint_sections(const Checkpoint& c) {
  check_meta(c, "cannot write ");
  check_identity(c.identity, "cannot write the identity: ");
  return {{"META", meta_payload(c)},
          {"IDEN", c.identity},
          {"PARM", parameters_payload(c.parameters)},
          {"OPTS", c.optimizer_state},
          {"RPRT", report_payload(c.figures)},
          {"TIME", time_payload(c.figures)}};
}

std::string serialize_checkpoint(const Checkpoint& c) {
  const auto sections = checkpoint_sections(c);
  std::uint64_t total = kHeaderBytes + kTrailerBytes;
  for (const auto& s : sections) total += kSectionHeaderBytes + s.second.size();
  CheckpointWriter w;
  w.bytes().reserve(static_cast<std::size_t>(total));
  w.raw(kMagic, sizeof kMagic);
  w.pod(kVersion);
  w.pod(kSectionCount);
  w.pod(total);
  for (const auto& [tag, payload] : sections) {
    w.raw(tag.data(), 4);
    w.pod<std::uint64_t>(payload.size());
    w.raw(payload.data(), payload.size());
  }
  w.pod(crc32_of(w.bytes().data(), w.bytes().size()));
  return std::move(w.bytes());
}

Checkpoint parse_checkpoint(const std::string& bytes) {
  const std::size_t body = check_frame(bytes);
  Checkpoint c;
  std::size_t at = kHeaderBytes;
  for (std::uint32_t i = 0; i < kSectionCount; ++i) {
    const char* tag = kCheckpointSections[i];
    const std::size_t end = section_end(bytes, body, at, i);
    CheckpointReader r(bytes, at + kSectionHeaderBytes, end, tag);
    read_section(i, r, c);
    at = end;
  }
  if (at != body) fail(std::to_string(body - at) + " bytes after the last section");
  return c;
}

}  // namespace gw::trainer
