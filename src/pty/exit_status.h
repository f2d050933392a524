// exit_status.h: how a child ended, with both the code and the signal.
#pragma once

#include <signal.h>

#include <string>

namespace uexec::pty {

struct ExitStatus {
  int code = 0;       // exit status when the child exited; 0 when killed
  int signal = 0;     // terminating signal, 0 when it exited normally
  bool core_dumped = false;

  // The shell's number: the exit code, or 128 + signal for a signal death.
  int shell_code() const noexcept { return signal != 0 ? 128 + signal : code; }
  // "exit 7" or "signal SIGKILL (core dumped)".
  std::string describe() const;
};

// How a child ended, from what waitid(2) reported of it (si_code and si_status).
ExitStatus exit_status_of(const siginfo_t& si) noexcept;

// "SIGTERM" for 15; "SIG42" for a number without a name.
std::string signal_name(int signo);
// 15 for "SIGTERM", "TERM" or "15"; 0 when unknown.
int signal_from_name(const std::string& name);

}  // namespace uexec::pty
