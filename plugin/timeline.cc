#include "plugin/timeline.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace gw {
namespace {

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
  file_ = std::fopen(path_.c_str(), "w");
  if (file_ == nullptr) {
    throw std::runtime_error("GRADWIRE_TIMELINE: cannot write '" + path_ +
                             "': " + std::strerror(errno));
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
  if (std::fputs("[\n", file_) < 0) throw std::runtime_error("GRADWIRE_TIMELINE: write error");
  end_ = std::ftell(file_);
  flush();
}

Timeline::~Timeline() {
  try {
    flush();
  } catch (...) {
    // A destructor must not throw; the file holds every step flushed before.
  }
  std::fclose(file_);
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
  // Overwrite the previous closing bracket with the new events, then close the array again.
  if (std::fseek(file_, end_, SEEK_SET) != 0) {
    throw std::runtime_error("GRADWIRE_TIMELINE: cannot seek in '" + path_ + "'");
  }
  if (!pending_.empty()) {
    if (std::fwrite(pending_.data(), 1, pending_.size(), file_) != pending_.size()) {
      throw std::runtime_error("GRADWIRE_TIMELINE: write error on '" + path_ + "'");
    }
    any_ = true;
    pending_.clear();
  }
  end_ = std::ftell(file_);
  if (std::fputs("\n]\n", file_) < 0 || std::fflush(file_) != 0) {
    throw std::runtime_error("GRADWIRE_TIMELINE: write error on '" + path_ + "'");
  }
}

}  // namespace gw
