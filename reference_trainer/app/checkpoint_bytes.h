// The checkpoint format's fixed-size reads and writes (Note [Checkpoint format]): a writer that
// appends a section's fields, and a reader bounded by one section that refuses, naming the field,
// whatever would read past it. For checkpoint.cc and checkpoint_figures.cc only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "plugin/comm/counting_communicator.h"

namespace gw::trainer {

// The longest name a checkpoint holds (the sync policy's and the compressor's).
inline constexpr std::uint32_t kCheckpointMaxNameBytes = 64;

// Throws CheckpointError("checkpoint: " + message).
[[noreturn]] void checkpoint_fail(const std::string& message);

class CheckpointWriter {
 public:
  template <typename T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void flag(bool v) { pod<std::uint8_t>(v ? 1 : 0); }
  // A string of at most kCheckpointMaxNameBytes.
  void name(const std::string& s);
  void raw(const void* p, std::size_t n) { out_.append(static_cast<const char*>(p), n); }
  void traffic(const TrafficCounters& c);
  std::string& bytes() { return out_; }

 private:
  std::string out_;
};

// Every read is bounded by its section: [begin, end) of `bytes`.
class CheckpointReader {
 public:
  CheckpointReader(const std::string& bytes, std::size_t begin, std::size_t end,
                   const char* section)
      : bytes_(bytes), at_(begin), end_(end), section_(section) {}

  std::size_t left() const { return end_ - at_; }

  // Throws CheckpointError naming the section and `what`.
  [[noreturn]] void bad(const std::string& what) const;
  // Refuses unless `n` bytes are left for `what`.
  void need(std::size_t n, const char* what) const;

  template <typename T>
  T pod(const char* what) {
    static_assert(std::is_trivially_copyable_v<T>);
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, bytes_.data() + at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  bool flag(const char* what);
  std::string name(const char* what);
  std::string text(std::size_t n, const char* what);
  // A list's count, checked against the bytes left before anything is allocated for it.
  std::uint64_t count(const char* what, std::size_t record_bytes);
  void raw(void* dst, std::size_t n, const char* what);
  TrafficCounters traffic(const char* what);
  // Refuses bytes left over after the section's last field.
  void expect_end() const;

 private:
  const std::string& bytes_;
  std::size_t at_, end_;
  const char* section_;
};

}  // namespace gw::trainer
