// owner_lifeline.h: the sessions of a front door that owns them (`uexec mcp` alone, `uexec
// exec-server`) end with it, also when it dies without ending them (SIGKILL, a crash).
//
// A tty session's process gets SIGHUP when its owner dies (the PTY master closes), and a
// namespace sandbox's init has PR_SET_PDEATHSIG; but a pipe session's process group, and a
// Landlock or bwrap one, would run on, orphaned, with no one left to reach it. So such an
// owner starts a watcher, `uexec lifeline`: a small process outside the owner's process
// group, reading one socket (a SOCK_SEQPACKET pair). The owner sends a record when a
// session's process group starts and when it is gone (never after the kernel may reuse the
// id: ProcessManager sends it once the group is empty or killed); at a clean exit it disarms
// the watcher. When the socket reaches EOF without the disarm (the owner died), the watcher
// sends SIGTERM to every process group still listed, waits up to kLifelineGrace for them,
// sends SIGKILL to the rest and exits.
//
//   owner ──"S pid"/"E pid"/"D"──► socket ──► watcher (its own session, /dev/null for 0-2)
//
// Best effort: a process that left its session's process group (setsid, a daemonizing
// server) is not reached (the owner's own teardown reaches it through containment; the
// watcher does not). The daemon (`uexec serve`) has no lifeline: its sessions are meant to outlive it (issue 21).
// Owner side: loop thread only. A start or end record that would block is dropped (the
// socket's buffer fills only if the watcher is stopped); the disarm waits up to 500 ms.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"

namespace uexec::session {

inline constexpr std::chrono::milliseconds kLifelineGrace{2000};

class OwnerLifeline {
 public:
  // Starts `self_exe lifeline` with the socket's other end as its fd 3, and waits for the
  // intermediate process (the watcher forks away from it, so it is never our zombie).
  [[nodiscard]] static base::Result<std::unique_ptr<OwnerLifeline>> start(const std::string& self_exe);
  // Disarms the watcher: the owner ended its sessions itself.
  ~OwnerLifeline();
  OwnerLifeline(const OwnerLifeline&) = delete;
  OwnerLifeline& operator=(const OwnerLifeline&) = delete;

  // The process group `pgid` (a session leader's pid) now runs / is gone (its members killed).
  void started(pid_t pgid) noexcept;
  void ended(pid_t pgid) noexcept;

 private:
  explicit OwnerLifeline(base::UniqueFd socket) : socket_(std::move(socket)) {}
  void send(char op, pid_t pgid) noexcept;
  base::UniqueFd socket_;  // our end, O_NONBLOCK | O_CLOEXEC
};

// `uexec lifeline`: the watcher's side, reading records from `fd` until EOF. Returns the exit
// code (0; 2 when it was started by hand, with `fd` not a socket).
int run_lifeline_watcher(int fd);

}  // namespace uexec::session
