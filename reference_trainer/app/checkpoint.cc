#include "reference_trainer/app/checkpoint.h"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <set>
#include <type_traits>

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
constexpr std::uint32_t kMaxNameBytes = 64;  // the sync policy's and the compressor's names

std::string fail_prefix() { return "checkpoint: "; }

[[noreturn]] void fail(const std::string& message) {
  throw CheckpointError(fail_prefix() + message);
}

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

// ---- writing ----

class Writer {
 public:
  template <typename T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void flag(bool v) { pod<std::uint8_t>(v ? 1 : 0); }
  void name(const std::string& s) {
    if (s.size() > kMaxNameBytes) fail("the name '" + s + "' is longer than 64 bytes");
    pod<std::uint32_t>(static_cast<std::uint32_t>(s.size()));
    out_ += s;
  }
  void raw(const void* p, std::size_t n) { out_.append(static_cast<const char*>(p), n); }
  void traffic(const TrafficCounters& c) {
    for (const auto& k : c.kinds) {
      pod(k.sent_bytes);
      pod(k.received_bytes);
      pod(k.calls);
      pod(k.inter_node_sent_bytes);
      pod(k.inter_node_received_bytes);
    }
  }
  std::string& bytes() { return out_; }

 private:
  std::string out_;
};

// ---- reading: every read is bounded by its section ----

class Reader {
 public:
  Reader(const std::string& bytes, std::size_t begin, std::size_t end, const char* section)
      : bytes_(bytes), at_(begin), end_(end), section_(section) {}

  std::size_t left() const { return end_ - at_; }

  [[noreturn]] void bad(const std::string& what) const {
    fail("section " + std::string(section_) + ": " + what);
  }

  void need(std::size_t n, const char* what) const {
    if (n > left()) {
      bad(std::string(what) + " needs " + std::to_string(n) + " bytes, only " +
          std::to_string(left()) + " are left");
    }
  }

  template <typename T>
  T pod(const char* what) {
    static_assert(std::is_trivially_copyable_v<T>);
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, bytes_.data() + at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  bool flag(const char* what) {
    const auto v = pod<std::uint8_t>(what);
    if (v > 1) bad(std::string(what) + " is " + std::to_string(v) + " (a flag is 0 or 1)");
    return v == 1;
  }
  std::string name(const char* what) {
    const auto n = pod<std::uint32_t>(what);
    if (n > kMaxNameBytes)
      bad(std::string(what) + " is " + std::to_string(n) + " bytes long (at most 64)");
    return text(n, what);
  }
  std::string text(std::size_t n, const char* what) {
    need(n, what);
    std::string s = bytes_.substr(at_, n);
    at_ += n;
    return s;
  }
  // A list's count, checked against the bytes left before anything is allocated for it.
  std::uint64_t count(const char* what, std::size_t record_bytes) {
    const auto n = pod<std::uint64_t>(what);
    if (n > left() / record_bytes) {
      bad(std::string(what) + " is " + std::to_string(n) + ", which needs more than the " +
          std::to_string(left()) + " bytes left");
    }
    return n;
  }
  void raw(void* dst, std::size_t n, const char* what) {
    need(n, what);
    // An empty list's data() may be null, which memcpy must not get even for 0 bytes (found by
    // fuzz_checkpoint: a checkpoint without parameters).
    if (n != 0) std::memcpy(dst, bytes_.data() + at_, n);
    at_ += n;
  }
  TrafficCounters traffic(const char* what) {
    TrafficCounters c;
    for (auto& k : c.kinds) {
      k.sent_bytes = pod<std::uint64_t>(what);
      k.received_bytes = pod<std::uint64_t>(what);
      k.calls = pod<std::uint64_t>(what);
      k.inter_node_sent_bytes = pod<std::uint64_t>(what);
      k.inter_node_received_bytes = pod<std::uint64_t>(what);
    }
    return c;
  }
  void expect_end() const {
    if (left() != 0) bad(std::to_string(left()) + " bytes left over after its last field");
  }

 private:
  const std::string& bytes_;
  std::size_t at_, end_;
  const char* section_;
};

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
  Writer w;
  w.pod(c.rank);
  w.pod(c.world_size);
  w.pod(c.steps);
  w.pod(c.epoch);
  w.pod(c.step_in_epoch);
  w.pod(c.steps_per_epoch);
  return std::move(w.bytes());
}

std::string parameters_payload(const std::vector<float>& p) {
  Writer w;
  w.pod<std::uint64_t>(p.size());
  w.raw(p.data(), p.size() * sizeof(float));
  return std::move(w.bytes());
}

// Record sizes, for the counts' checks.
constexpr std::size_t kEpochRecord = 7 * 8;
constexpr std::size_t kEvalRecord = 6 * 8;
constexpr std::size_t kPointRecord = 4 * 8 + 1 + 8 + 1;
constexpr std::size_t kTimedRecord = 2 * 8;

std::string report_payload(const RunFigures& f) {
  Writer w;
  w.pod(f.epoch_loss_sum);
  w.pod(f.samples);
  w.traffic(f.traffic);
  w.traffic(f.epoch_traffic_start);
  w.pod<std::uint64_t>(f.epochs.size());
  for (const EpochResult& e : f.epochs) {
    w.pod<std::int64_t>(e.epoch);
    w.pod(e.loss);
    w.pod(e.test_accuracy);
    w.pod(e.test_loss);
    w.pod<std::uint64_t>(e.samples);
    w.pod<std::uint64_t>(e.gradient_bytes_sent);
    w.pod<std::uint64_t>(e.parameter_bytes_sent);
  }
  w.pod<std::uint64_t>(f.history.size());
  for (const EvalPoint& p : f.history) {
    w.pod<std::int64_t>(p.step);
    w.pod(p.epoch);
    w.pod(p.test_accuracy);
    w.pod(p.test_loss);
    w.pod<std::uint64_t>(p.gradient_bytes_sent);
    w.pod<std::uint64_t>(p.parameter_bytes_sent);
  }
  w.name(f.sync.policy);
  w.pod<std::int64_t>(f.sync.gradient_exchanges);
  w.pod<std::int64_t>(f.sync.parameter_exchanges);
  w.pod<std::int64_t>(f.sync.state_exchanges);
  w.pod<std::uint64_t>(f.sync.points.size());
  for (const AveragingPoint& p : f.sync.points) {
    w.pod<std::int64_t>(p.step);
    w.pod<std::int64_t>(p.local_steps);
    w.pod<std::int64_t>(p.k);
    w.pod<std::int64_t>(p.next_k);
    w.flag(p.has_loss);
    w.pod(p.loss);
    w.flag(p.requested);
  }
  const CompressionStats& c = f.compression;
  w.name(c.compressor);
  w.pod<std::int64_t>(c.warmup_end_step);
  w.pod<std::int64_t>(c.steps_after_warmup);
  w.pod<std::uint64_t>(c.gradient_bytes_after_warmup);
  w.pod<std::uint64_t>(c.dense_bytes_per_step);
  w.pod<std::int64_t>(c.sparse_exchanges);
  w.pod<std::int64_t>(c.dense_fallbacks);
  return std::move(w.bytes());
}

std::string time_payload(const RunFigures& f) {
  Writer w;
  w.pod(f.wall_seconds);
  w.pod(f.train_seconds);
  w.pod(f.epoch_train_seconds);
  w.pod(f.epoch_wall_seconds);
  w.pod<std::uint64_t>(f.epochs.size());
  for (const EpochResult& e : f.epochs) {
    w.pod(e.wall_seconds);
    w.pod(e.train_seconds);
  }
  w.pod<std::uint64_t>(f.history.size());
  for (const EvalPoint& p : f.history) {
    w.pod(p.train_seconds);
    w.pod(p.wall_seconds);
  }
  return std::move(w.bytes());
}

void read_meta(Reader& r, Checkpoint& c) {
  c.rank = r.pod<std::uint32_t>("the rank");
  c.world_size = r.pod<std::uint32_t>("the world size");
  c.steps = r.pod<std::int64_t>("the step count");
  c.epoch = r.pod<std::int64_t>("the epoch");
  c.step_in_epoch = r.pod<std::uint64_t>("the step in the epoch");
  c.steps_per_epoch = r.pod<std::uint64_t>("the steps per epoch");
  r.expect_end();
  check_meta(c, "section META: ");
}

void read_parameters(Reader& r, std::vector<float>& p) {
  const auto n = r.count("the parameter count", sizeof(float));
  p.resize(n);
  r.raw(p.data(), n * sizeof(float), "the parameters");
  r.expect_end();
}

void read_report(Reader& r, RunFigures& f) {
  f.epoch_loss_sum = r.pod<double>("the epoch's loss sum");
  f.samples = r.pod<std::uint64_t>("the samples");
  f.traffic = r.traffic("the traffic counters");
  f.epoch_traffic_start = r.traffic("the epoch's traffic counters");
  f.epochs.resize(r.count("the epoch count", kEpochRecord));
  for (EpochResult& e : f.epochs) {
    const auto epoch = r.pod<std::int64_t>("an epoch number");
    if (epoch < 1 || epoch > INT_MAX) r.bad("epoch number " + std::to_string(epoch));
    e.epoch = static_cast<int>(epoch);
    e.loss = r.pod<double>("an epoch's loss");
    e.test_accuracy = r.pod<double>("an epoch's test accuracy");
    e.test_loss = r.pod<double>("an epoch's test loss");
    e.samples = r.pod<std::uint64_t>("an epoch's samples");
    e.gradient_bytes_sent = r.pod<std::uint64_t>("an epoch's gradient bytes");
    e.parameter_bytes_sent = r.pod<std::uint64_t>("an epoch's parameter bytes");
  }
  f.history.resize(r.count("the evaluation count", kEvalRecord));
  for (EvalPoint& p : f.history) {
    p.step = r.pod<std::int64_t>("an evaluation's step");
    p.epoch = r.pod<double>("an evaluation's epoch");
    p.test_accuracy = r.pod<double>("an evaluation's test accuracy");
    p.test_loss = r.pod<double>("an evaluation's test loss");
    p.gradient_bytes_sent = r.pod<std::uint64_t>("an evaluation's gradient bytes");
    p.parameter_bytes_sent = r.pod<std::uint64_t>("an evaluation's parameter bytes");
  }
  f.sync.policy = r.name("the sync policy's name");
  f.sync.gradient_exchanges = r.pod<std::int64_t>("the gradient exchanges");
  f.sync.parameter_exchanges = r.pod<std::int64_t>("the parameter exchanges");
  f.sync.state_exchanges = r.pod<std::int64_t>("the state exchanges");
  f.sync.points.resize(r.count("the averaging point count", kPointRecord));
  for (AveragingPoint& p : f.sync.points) {
    p.step = r.pod<std::int64_t>("an averaging point's step");
    p.local_steps = r.pod<std::int64_t>("an averaging point's local steps");
    p.k = r.pod<std::int64_t>("an averaging point's k");
    p.next_k = r.pod<std::int64_t>("an averaging point's next k");
    p.has_loss = r.flag("an averaging point's loss flag");
    p.loss = r.pod<double>("an averaging point's loss");
    p.requested = r.flag("an averaging point's requested flag");
  }
  CompressionStats& c = f.compression;
  c.compressor = r.name("the compressor's name");
  c.warmup_end_step = r.pod<std::int64_t>("the warm-up's end");
  c.steps_after_warmup = r.pod<std::int64_t>("the steps after the warm-up");
  c.gradient_bytes_after_warmup = r.pod<std::uint64_t>("the gradient bytes after the warm-up");
  c.dense_bytes_per_step = r.pod<std::uint64_t>("the dense bytes per step");
  c.sparse_exchanges = r.pod<std::int64_t>("the sparse exchanges");
  c.dense_fallbacks = r.pod<std::int64_t>("the dense fallbacks");
  r.expect_end();
}

void read_time(Reader& r, RunFigures& f) {
  f.wall_seconds = r.pod<double>("the wall seconds");
  f.train_seconds = r.pod<double>("the training seconds");
  f.epoch_train_seconds = r.pod<double>("the epoch's training seconds");
  f.epoch_wall_seconds = r.pod<double>("the epoch's wall seconds");
  const auto epochs = r.count("the timed epoch count", kTimedRecord);
  if (epochs != f.epochs.size()) {
    r.bad("times for " + std::to_string(epochs) + " epochs, section RPRT has " +
          std::to_string(f.epochs.size()));
  }
  for (EpochResult& e : f.epochs) {
    e.wall_seconds = r.pod<double>("an epoch's wall seconds");
    e.train_seconds = r.pod<double>("an epoch's training seconds");
  }
  const auto points = r.count("the timed evaluation count", kTimedRecord);
  if (points != f.history.size()) {
    r.bad("times for " + std::to_string(points) + " evaluations, section RPRT has " +
          std::to_string(f.history.size()));
  }
  for (EvalPoint& p : f.history) {
    p.train_seconds = r.pod<double>("an evaluation's training seconds");
    p.wall_seconds = r.pod<double>("an evaluation's wall seconds");
  }
  r.expect_end();
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
  Writer w;
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
  const std::size_t size = bytes.size();
  const std::size_t magic_seen = std::min(size, sizeof kMagic);
  if (std::memcmp(bytes.data(), kMagic, magic_seen) != 0) {
    fail("not a gradwire_train checkpoint (it does not start with \"GWCKPT\\r\\n\")");
  }
  if (size < kHeaderBytes) {
    fail("truncated: " + std::to_string(size) + " bytes, shorter than the " +
         std::to_string(kHeaderBytes) + "-byte header");
  }
  Reader header(bytes, sizeof kMagic, kHeaderBytes, "header");
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

  Checkpoint c;
  std::size_t at = kHeaderBytes;
  for (std::uint32_t i = 0; i < kSectionCount; ++i) {
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
    const std::size_t end = at + static_cast<std::size_t>(length);
    Reader r(bytes, at, end, tag);
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
    at = end;
  }
  if (at != body) fail(std::to_string(body - at) + " bytes after the last section");
  return c;
}

}  // namespace gw::trainer
