// daemon_lock.h: one daemon per socket: the lock that makes a second `uexec serve` refuse.
//
// `uexec serve` takes an exclusive POSIX record lock (fcntl F_SETLK) on <socket>.lock (0600,
// beside the socket in the daemon's 0700 directory, which sandboxes never see) before it
// touches the socket or the token, and holds it until it exits; the file also holds its pid,
// for people. The pid reported or signalled is the one the kernel names as the lock's
// holder (F_GETLK), never a stale one read from the file. A second `serve` on the same socket finds the lock
// taken and refuses, naming the holder's pid, so it can no longer delete the live daemon's
// socket and rewrite its token (the first daemon would run on, unreachable). With --replace
// it sends the holder SIGTERM and waits for the lock instead: the old daemon ends its
// sessions, removes its socket and exits first. The kernel drops the lock when its holder
// dies, even by SIGKILL, so a lock file left behind never blocks anyone: only a live daemon
// does.
//
// Rules: call before listening; keep the object alive as long as the daemon listens.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"
#include "policy/control_registry.h"

namespace uexec::cli {

class DaemonLock {
 public:
  // Takes the lock of `socket_path` (whose directory must exist). Held by a live daemon:
  // without `replace`, an error naming its pid; with it, SIGTERM to that pid, then the lock
  // once it is free, or an error when it is not within `wait`.
  [[nodiscard]] static base::Result<DaemonLock> acquire(const std::string& socket_path, bool replace,
                                                        std::chrono::milliseconds wait);

  // The pid of the daemon holding `socket_path`'s lock; 0 when none does; -1 when one in
  // another pid namespace does. Never call it inside the daemon: closing any fd of the lock
  // file drops a POSIX lock its process holds.
  static pid_t holder(const std::string& socket_path);

  // `uexec stop`: SIGTERM to that daemon, then waits (up to `wait`) until its lock is free.
  // Returns the pid stopped; an error when none runs or it did not exit in time.
  [[nodiscard]] static base::Result<pid_t> stop(const std::string& socket_path, std::chrono::milliseconds wait);

  // The path of the lock file for `socket_path`.
  static std::string path_for(const std::string& socket_path) { return policy::socket_lock_path(socket_path); }

 private:
  explicit DaemonLock(base::UniqueFd fd) : fd_(std::move(fd)) {}
  base::UniqueFd fd_;
};

}  // namespace uexec::cli
