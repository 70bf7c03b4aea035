// The timeline (GRADWIRE_TIMELINE): a Chrome trace per rank of every bucket's phases and every
// step, readable in Perfetto (ui.perfetto.dev) or chrome://tracing.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace gw {

// Note [Timeline format]
// The file is a JSON array of Chrome trace events (the "JSON Array Format"): the process is the
// rank (pid = rank), track 0 is the program's thread (a span per step and, inside it, the time
// step() waited for the engine), and track b + 1 is bucket b, with a span per phase: waiting for
// its gradients (from the step's first gradient_ready to the bucket's release), queued (released,
// not yet started), encode, exchange, decode, and the AMP check where it runs; under gradient
// accumulation an instant on track 0 ends each backward pass but the last ("backward pass k of
// N"); on a device these
// are the device's times (Note [Device phases on the host clock]). Timestamps are
// microseconds of the monotonic clock, which every process on one host shares, so the files of
// several ranks can be merged into one view. Every step's events are appended and the array is
// closed again before flush() returns, so the file is valid JSON after every step, including
// the last one before a crash.
//
// Note [Timeline stays valid JSON]
// A flush writes the new events over the closing bracket, then the bracket after them. A write
// that fails part-way (a full disk, a file size limit) would leave the file cut inside an event.
// So on a failed write the file is put back as it was before the flush: the closing bracket at
// its old place, rewritten over bytes the file already held (so it needs no new space), and the
// file truncated after it. The file then still holds every step flushed before, as valid JSON,
// and the error names the file.
class Timeline {
 public:
  using Clock = std::chrono::steady_clock;

  // Creates (truncates) the rank's file, rank_path(path, rank), and names the tracks. Throws
  // config::ConfigError naming the file when it cannot be created, std::runtime_error when the
  // first write fails.
  Timeline(const std::string& path, int rank, const std::vector<std::string>& track_names);
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // "{rank}" in `path` is replaced by the rank; otherwise ".rank<R>" goes before a ".json"
  // ending, or ".rank<R>.json" is appended.
  static std::string rank_path(const std::string& path, int rank);
  const std::string& path() const { return path_; }

  // Buffers one event; nothing reaches the file before flush(). `name` must not need escaping.
  void span(std::size_t track, const char* name, Clock::time_point begin, Clock::time_point end,
            std::int64_t step);
  void instant(std::size_t track, const char* name, Clock::time_point at, std::int64_t step);
  // Appends the buffered events and closes the array; throws std::runtime_error on a write error,
  // leaving the file as it was before (Note [Timeline stays valid JSON]).
  void flush();

 private:
  void add(const std::string& event);
  // Writes all of `bytes` at `offset`; false on an error (errno says which).
  bool write_at(const std::string& bytes, std::int64_t offset);
  [[noreturn]] void write_failed();

  std::string path_;
  int rank_ = 0;
  int fd_ = -1;
  std::string pending_;
  std::int64_t end_ = 0;  // where the closing bracket starts
  bool any_ = false;
};

}  // namespace gw
