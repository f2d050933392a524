// log.h: leveled logging to stderr with fmt.
//
// UEXEC_LOG(kWarn, "spawn {} failed: {}", argv0, err.message()) prints
// "uexec: warning: spawn ... failed: ..."; at debug level the line names the calling function. The level comes from UEXEC_LOG
// (error|warn|info|debug; default warn), read once. Never call from a spawned child.
#pragma once

#include <fmt/core.h>

#include <string_view>

namespace uexec::base {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

LogLevel log_level() noexcept;
void set_log_level(LogLevel level) noexcept;
void log_line(LogLevel level, const char* func, std::string_view text) noexcept;

}  // namespace uexec::base

#define UEXEC_LOG(level, ...)                                                            \
  do {                                                                                   \
    if (::uexec::base::LogLevel::level <= ::uexec::base::log_level())                   \
      ::uexec::base::log_line(::uexec::base::LogLevel::level, __func__,                 \
                              ::fmt::format(__VA_ARGS__));                               \
  } while (0)
