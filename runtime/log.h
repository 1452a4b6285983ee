#pragma once
// RUDNN_LOG=info|debug prints what the runtime does (compiles, cache hits, device choice) to stderr.
#include <fmt/format.h>

namespace rudnn::runtime {

enum class LogLevel { Off = 0, Info = 1, Debug = 2 };
LogLevel log_level();
void log_line(LogLevel level, const std::string& text);

template <class... Args>
void log_info(fmt::format_string<Args...> f, Args&&... args) {
  if (log_level() >= LogLevel::Info) log_line(LogLevel::Info, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void log_debug(fmt::format_string<Args...> f, Args&&... args) {
  if (log_level() >= LogLevel::Debug) log_line(LogLevel::Debug, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace rudnn::runtime
