#include "plugin/logger.h"

#include <cstdio>
#include <stdexcept>

namespace gw {

LogLevel parse_log_level(const std::string& text) {
  if (text == "error") return LogLevel::kError;
  if (text == "warn") return LogLevel::kWarn;
  if (text == "info") return LogLevel::kInfo;
  if (text == "debug") return LogLevel::kDebug;
  throw std::invalid_argument("unknown log level '" + text + "'");
}

void Logger::log(LogLevel level, const char* format, ...) const {
  if (!enabled(level)) return;
  char message[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof message, format, args);
  va_end(args);
  std::fprintf(stderr, "gradwire[%d]: %s\n", rank_, message);
}

}  // namespace gw
