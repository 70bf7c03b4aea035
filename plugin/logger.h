// gradwire's messages on stderr, filtered by GRADWIRE_LOG_LEVEL and prefixed with the rank.
#pragma once

#include <cstdarg>
#include <string>

namespace gw {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

// "error", "warn", "info" or "debug" (the accepted values of GRADWIRE_LOG_LEVEL).
LogLevel parse_log_level(const std::string& text);

class Logger {
 public:
  Logger(LogLevel level, int rank) : level_(level), rank_(rank) {}
  bool enabled(LogLevel level) const { return level <= level_; }
  // printf-style; prints "gradwire[rank]: ..." when `level` is enabled.
  void log(LogLevel level, const char* format, ...) const __attribute__((format(printf, 3, 4)));

 private:
  LogLevel level_;
  int rank_;
};

}  // namespace gw
