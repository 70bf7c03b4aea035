#include "reference_trainer/app/checkpoint_bytes.h"

#include "reference_trainer/app/checkpoint.h"

namespace gw::trainer {

void checkpoint_fail(const std::string& message) {
  throw CheckpointError("checkpoint: " + message);
}

void CheckpointWriter::name(const std::string& s) {
  if (s.size() > kCheckpointMaxNameBytes) {
    checkpoint_fail("the name '" + s + "' is longer than 64 bytes");
  }
  pod<std::uint32_t>(static_cast<std::uint32_t>(s.size()));
  out_ += s;
}

void CheckpointWriter::traffic(const TrafficCounters& c) {
  for (const auto& k : c.kinds) {
    pod(k.sent_bytes);
    pod(k.received_bytes);
    pod(k.calls);
    pod(k.inter_node_sent_bytes);
    pod(k.inter_node_received_bytes);
  }
}

void CheckpointReader::bad(const std::string& what) const {
  checkpoint_fail("section " + std::string(section_) + ": " + what);
}

void CheckpointReader::need(std::size_t n, const char* what) const {
  if (n > left()) {
    bad(std::string(what) + " needs " + std::to_string(n) + " bytes, only " +
        std::to_string(left()) + " are left");
  }
}

bool CheckpointReader::flag(const char* what) {
  const auto v = pod<std::uint8_t>(what);
  if (v > 1) bad(std::string(what) + " is " + std::to_string(v) + " (a flag is 0 or 1)");
  return v == 1;
}

std::string CheckpointReader::name(const char* what) {
  const auto n = pod<std::uint32_t>(what);
  if (n > kCheckpointMaxNameBytes)
    bad(std::string(what) + " is " + std::to_string(n) + " bytes long (at most 64)");
  return text(n, what);
}

std::string CheckpointReader::text(std::size_t n, const char* what) {
  need(n, what);
  std::string s = bytes_.substr(at_, n);
  at_ += n;
  return s;
}

std::uint64_t CheckpointReader::count(const char* what, std::size_t record_bytes) {
  const auto n = pod<std::uint64_t>(what);
  if (n > left() / record_bytes) {
    bad(std::string(what) + " is " + std::to_string(n) + ", which needs more than the " +
        std::to_string(left()) + " bytes left");
  }
  return n;
}

void CheckpointReader::raw(void* dst, std::size_t n, const char* what) {
  need(n, what);
  // An empty list's data() may be null, which memcpy must not get even for 0 bytes (found by
  // fuzz_checkpoint: a checkpoint without parameters).
  if (n != 0) std::memcpy(dst, bytes_.data() + at_, n);
  at_ += n;
}

TrafficCounters CheckpointReader::traffic(const char* what) {
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

void CheckpointReader::expect_end() const {
  if (left() != 0) bad(std::to_string(left()) + " bytes left over after its last field");
}

}  // namespace gw::trainer
