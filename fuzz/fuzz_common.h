// fuzz_common.h: what every libFuzzer target in fuzz/ shares.
//
// A target is one `LLVMFuzzerTestOneInput` that feeds arbitrary bytes to a piece of
// libuexec and checks invariants the code promises in its header essays and contracts.
// A broken invariant is a crash on purpose: FUZZ_CHECK prints the check's name and what
// was expected, then aborts, so libFuzzer saves the input as crash-<sha1>.
//
//   FUZZ_CHECK(name, cond, fmt, args...)   always on; `name` is a short kebab-case tag
//   UEXEC_FUZZ_IGNORE=tag,tag              skips the named checks (a known bug that is
//                                          not fixed yet must not hide everything else)
//   valid_utf8(s)                          an independent RFC 3629 validator
//   NoSpawnJail::install()                 seccomp: this process can start no program
//   quiet_logs()                           uexec's logger down to errors only
//
// The jail: targets that build a ProcessManager (fuzz_rpc, fuzz_agent_args) must never
// start a process, whatever the input asks. It is installed on the first input, not in
// LLVMFuzzerInitialize, so libFuzzer's own -fork/-merge/-minimize_crash drivers, which
// run no input themselves, can still start their workers. It refuses clone3 (ENOSYS, so
// glibc falls back to clone), vfork, and clone with CLONE_VFORK or without CLONE_THREAD
// or CLONE_UNTRACED (EPERM): uexec's spawn (CLONE_VM|CLONE_VFORK), posix_spawn, popen and
// fork all fail, while threads, LeakSanitizer's tracer (CLONE_UNTRACED) and the sanitizer
// symbolizer (the raw fork syscall, then execve) still work. Harness code only.
#pragma once

#include <fmt/core.h>
#include <seccomp.h>
#include <sched.h>
#include <sys/prctl.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "base/log.h"

namespace uexec::fuzz {

// Is the check `name` switched off by UEXEC_FUZZ_IGNORE (a comma-separated list)?
inline bool ignored(std::string_view name) {
  static const std::string list = [] {
    const char* v = std::getenv("UEXEC_FUZZ_IGNORE");
    return v ? "," + std::string(v) + "," : std::string();
  }();
  return !list.empty() && list.find("," + std::string(name) + ",") != std::string::npos;
}

[[noreturn]] inline void check_failed(const char* name, const char* file, int line, const std::string& what) {
  std::fprintf(stderr, "\n==uexec-fuzz== invariant `%s` broken at %s:%d\n==uexec-fuzz== %s\n", name, file, line,
               what.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace uexec::fuzz

// Aborts (a libFuzzer crash) when `cond` is false, unless UEXEC_FUZZ_IGNORE names the check.
#define FUZZ_CHECK(name, cond, ...)                                                            \
  do {                                                                                         \
    if (!(cond) && !::uexec::fuzz::ignored(name))                                              \
      ::uexec::fuzz::check_failed(name, __FILE__, __LINE__, ::fmt::format(__VA_ARGS__));      \
  } while (0)

namespace uexec::fuzz {

// RFC 3629 UTF-8: no overlongs, no surrogates, nothing above U+10FFFF. Written here, not
// taken from session/utf8_cut, so that a bug there cannot hide itself.
inline bool valid_utf8(std::string_view s) {
  std::size_t i = 0, n = s.size();
  auto at = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  while (i < n) {
    unsigned c = at(i);
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len;
    std::uint32_t cp;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (std::size_t k = 1; k < len; ++k) {
      if ((at(i + k) & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (at(i + k) & 0x3F);
    }
    static constexpr std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

// A short, printable excerpt of `s` for check messages.
inline std::string excerpt(std::string_view s, std::size_t max = 160) {
  std::string out;
  for (std::size_t i = 0; i < s.size() && out.size() < max; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7F && c != '\\')
      out += static_cast<char>(c);
    else
      out += fmt::format("\\x{:02x}", c);
  }
  if (out.size() >= max) out += "...";
  return out;
}

inline void quiet_logs() { base::set_log_level(base::LogLevel::kError); }

class NoSpawnJail {
 public:
  // Idempotent; aborts if the filter cannot be loaded (a harness that could spawn must not run).
  static void install() {
    static bool done = [] {
      scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
      if (!ctx) fail("seccomp_init", ENOMEM);
      add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
      add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(vfork), 0);
      add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1, flags_masked(CLONE_VFORK, CLONE_VFORK));
      add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1, flags_masked(CLONE_THREAD | CLONE_UNTRACED, 0));
      ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
      if (int rc = seccomp_load(ctx); rc < 0) fail("seccomp_load", -rc);
      seccomp_release(ctx);
      return true;
    }();
    (void)done;
  }

 private:
  // clone's first argument (its flags) masked with `mask` equals `value`.
  static scmp_arg_cmp flags_masked(unsigned long mask, unsigned long value) {
    scmp_arg_cmp c{};
    c.arg = 0;
    c.op = SCMP_CMP_MASKED_EQ;
    c.datum_a = mask;
    c.datum_b = value;
    return c;
  }
  static void add(scmp_filter_ctx ctx, std::uint32_t action, int sys, unsigned n, scmp_arg_cmp cmp = {}) {
    if (int rc = seccomp_rule_add_array(ctx, action, sys, n, n ? &cmp : nullptr); rc < 0) fail("seccomp_rule_add", -rc);
  }
  [[noreturn]] static void fail(const char* what, int err) {
    std::fprintf(stderr, "uexec-fuzz: %s: %s; refusing to fuzz without the no-spawn jail\n", what, std::strerror(err));
    std::abort();
  }
};

}  // namespace uexec::fuzz
