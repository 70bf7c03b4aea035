#include "plugin/timeline.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "plugin/config/registry.h"

namespace gw {
namespace {

constexpr char kClose[] = "\n]\n";

double micros(Timeline::Clock::time_point t) {
  return std::chrono::duration<double, std::micro>(t.time_since_epoch()).count();
}

}  // namespace

std::string Timeline::rank_path(const std::string& path, int rank) {
  const std::string r = std::to_string(rank);
  const std::string placeholder = "{rank}";
  if (const auto at = path.find(placeholder); at != std::string::npos) {
    std::string out = path;
    out.replace(at, placeholder.size(), r);
    return out;
  }
  const std::string ext = ".json";
  if (path.size() > ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0) {
    return path.substr(0, path.size() - ext.size()) + ".rank" + r + ext;
  }
  return path + ".rank" + r + ext;
}

Timeline::Timeline(const std::string& path, int rank, const std::vector<std::string>& track_names)
    : path_(rank_path(path, rank)), rank_(rank) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw config::ConfigError("GRADWIRE_TIMELINE: cannot write '" + path_ +
                              "': " + std::strerror(errno) +
                              " (accepted: a file path in an existing folder that this process "
                              "can write; \"{rank}\" in it is replaced by the rank)");
  }
  nlohmann::json process = {{"name", "process_name"},
                            {"ph", "M"},
                            {"pid", rank_},
                            {"args", {{"name", "rank " + std::to_string(rank_)}}}};
  add(process.dump());
  for (std::size_t t = 0; t < track_names.size(); ++t) {
    nlohmann::json thread = {{"name", "thread_name"},
                             {"ph", "M"},
                             {"pid", rank_},
                             {"tid", t},
                             {"args", {{"name", track_names[t]}}}};
    add(thread.dump());
    nlohmann::json order = {{"name", "thread_sort_index"},
                            {"ph", "M"},
                            {"pid", rank_},
                            {"tid", t},
                            {"args", {{"sort_index", t}}}};
    add(order.dump());
  }
  const std::string open = "[\n";
  if (!write_at(open + kClose, 0)) {
    const int error = errno;
    ::close(fd_);
    errno = error;
    write_failed();
  }
  end_ = static_cast<std::int64_t>(open.size());
  flush();
}

Timeline::~Timeline() {
  try {
    flush();
  } catch (...) {
    // A destructor must not throw; the file holds every step flushed before.
  }
  ::close(fd_);
}

bool Timeline::write_at(const std::string& bytes, std::int64_t offset) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::pwrite(fd_, bytes.data() + done, bytes.size() - done,
                               static_cast<off_t>(offset + static_cast<std::int64_t>(done)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

void Timeline::write_failed() {
  throw std::runtime_error("GRADWIRE_TIMELINE: write error on '" + path_ + "': " +
                           std::strerror(errno) + "; the file keeps every step written before");
}

void Timeline::add(const std::string& event) {
  if (any_ || !pending_.empty()) pending_ += ",\n";
  pending_ += event;
}

void Timeline::span(std::size_t track, const char* name, Clock::time_point begin,
                    Clock::time_point end, std::int64_t step) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "{\"name\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%zu,\"ts\":%.3f,\"dur\":%.3f,"
                "\"args\":{\"step\":%lld}}",
                name, rank_, track, micros(begin), micros(end) - micros(begin),
                static_cast<long long>(step));
  add(buf);
}

void Timeline::instant(std::size_t track, const char* name, Clock::time_point at,
                       std::int64_t step) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "{\"name\":\"%s\",\"ph\":\"i\",\"s\":\"p\",\"pid\":%d,\"tid\":%zu,\"ts\":%.3f,"
                "\"args\":{\"step\":%lld}}",
                name, rank_, track, micros(at), static_cast<long long>(step));
  add(buf);
}

void Timeline::flush() {
  if (pending_.empty()) return;
  // Overwrite the previous closing bracket with the new events, then close the array again.
  if (!write_at(pending_ + kClose, end_)) {
    // Put the file back as it was (Note [Timeline stays valid JSON]).
    const int error = errno;
    if (write_at(kClose, end_)) {
      (void)::ftruncate(fd_,
                        static_cast<off_t>(end_ + static_cast<std::int64_t>(sizeof kClose - 1)));
    }
    pending_.clear();
    errno = error;
    write_failed();
  }
  end_ += static_cast<std::int64_t>(pending_.size());
  any_ = true;
  pending_.clear();
}

}  // namespace gw
