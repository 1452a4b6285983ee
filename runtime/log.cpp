#include "log.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace rudnn::runtime {

LogLevel log_level() {
  static const LogLevel level = [] {
    const char* v = std::getenv("RUDNN_LOG");
    if (!v) return LogLevel::Off;
    if (!std::strcmp(v, "debug")) return LogLevel::Debug;
    if (!std::strcmp(v, "info")) return LogLevel::Info;
    return LogLevel::Off;
  }();
  return level;
}

void log_line(LogLevel level, const std::string& text) {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  std::fprintf(stderr, "[rudnn %s] %s\n", level == LogLevel::Debug ? "debug" : "info", text.c_str());
}

}  // namespace rudnn::runtime
