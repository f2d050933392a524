// base.cc: the out-of-line pieces of base: error text, checks, logging.
#include <fmt/core.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <unistd.h>

#include "base/check.h"
#include "base/log.h"
#include "base/result.h"

namespace uexec::base {

const char* errc_name(Errc code) noexcept {
  switch (code) {
    case Errc::kOk: return "ok";
    case Errc::kSystem: return "system error";
    case Errc::kExecFailed: return "could not start";
    case Errc::kInvalidArgument: return "invalid argument";
    case Errc::kNotFound: return "not found";
    case Errc::kClosed: return "closed";
    case Errc::kLimit: return "limit reached";
    case Errc::kUnsupported: return "unsupported";
    case Errc::kPolicy: return "sandbox policy";
  }
  return "unknown";
}

std::string Error::message() const {
  std::string out = context.empty() ? std::string(errc_name(code)) : context;
  if (sys_errno != 0) {
    const char* name = strerrorname_np(sys_errno);
    out += fmt::format(": {} ({})", std::strerror(sys_errno), name ? name : "?");
  } else if (code != Errc::kSystem && !context.empty() && code != Errc::kInvalidArgument) {
    out += fmt::format(" ({})", errc_name(code));
  }
  return out;
}

void check_failed(const char* file, int line, const char* expr) noexcept {
  std::fprintf(stderr, "uexec: CHECK failed at %s:%d: %s\n", file, line, expr);
  std::fflush(stderr);
  std::abort();
}

namespace {
LogLevel level_from_env() noexcept {
  const char* v = std::getenv("UEXEC_LOG");
  if (!v) return LogLevel::kWarn;
  std::string s(v);
  if (s == "error") return LogLevel::kError;
  if (s == "info") return LogLevel::kInfo;
  if (s == "debug") return LogLevel::kDebug;
  return LogLevel::kWarn;
}
std::atomic<int> g_level{static_cast<int>(level_from_env())};
}  // namespace

LogLevel log_level() noexcept { return static_cast<LogLevel>(g_level.load(std::memory_order_relaxed)); }
void set_log_level(LogLevel level) noexcept { g_level.store(static_cast<int>(level)); }

void log_line(LogLevel level, const char* func, std::string_view text) noexcept {
  // In words for people ("uexec: warning: …"); the function's name only at debug level, where
  // it helps and where a lambda's "operator()" is no surprise.
  static constexpr const char* kWord[] = {"error", "warning", "info", "debug"};
  std::string line = level == LogLevel::kDebug
                         ? fmt::format("uexec: debug ({}): {}\n", func, text)
                         : fmt::format("uexec: {}: {}\n", kWord[static_cast<int>(level)], text);
  // One write(2) per line so lines from several processes do not interleave mid-line.
  [[maybe_unused]] auto n = ::write(2, line.data(), line.size());
}

}  // namespace uexec::base
