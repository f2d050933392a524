#include "pty/exit_status.h"

#include <fmt/core.h>
#include <signal.h>
#include <string.h>

#include <cctype>
#include <string>

namespace uexec::pty {

std::string ExitStatus::describe() const {
  if (signal == 0) return fmt::format("exit {}", code);
  return fmt::format("signal {}{}", signal_name(signal), core_dumped ? " (core dumped)" : "");
}

ExitStatus exit_status_of(const siginfo_t& si) noexcept {
  ExitStatus st;
  switch (si.si_code) {
    case CLD_EXITED: st.code = si.si_status; break;
    case CLD_DUMPED: st.core_dumped = true; [[fallthrough]];
    case CLD_KILLED: st.signal = si.si_status; break;
    default: st.code = si.si_status; break;
  }
  return st;
}

std::string signal_name(int signo) {
  if (const char* abbrev = sigabbrev_np(signo)) return fmt::format("SIG{}", abbrev);
  return fmt::format("SIG{}", signo);
}

int signal_from_name(const std::string& name) {
  if (name.empty()) return 0;
  if (std::isdigit(static_cast<unsigned char>(name[0]))) {
    int n = 0;
    for (char c : name) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return 0;
      n = n * 10 + (c - '0');
      if (n >= NSIG) return 0;
    }
    return n;
  }
  std::string upper;
  for (char c : name) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::string bare = upper.rfind("SIG", 0) == 0 ? upper.substr(3) : upper;
  for (int s = 1; s < NSIG; ++s) {
    const char* abbrev = sigabbrev_np(s);
    if (abbrev && bare == abbrev) return s;
  }
  return 0;
}

}  // namespace uexec::pty
