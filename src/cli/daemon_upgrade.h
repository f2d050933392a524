// daemon_upgrade.h: `uexec serve --upgrade`: the running daemon replaced by the binary now on
// disk, every session kept.
//
// The daemon lock's owner is the holder (holder/holder.h); SIGUSR2 asks it for an upgrade (a
// service manager's reload sends the same signal). The holder asks its daemon to hand over:
// the daemon stops reading, writes each session's ring, screen and queued input to a carry
// file (holder/carry_file.h), gives it, the pipes' stdin and the Unix listener to the holder,
// and exits; the holder starts the binary at its path with the same flags and hands it all
// over, as after a crash but with nothing lost. Clients reconnect and resume; connections made
// meanwhile wait in the listener's backlog.
// upgrade_daemon() sends the signal and waits until a new daemon answers on the socket. It
// refuses a daemon that cannot upgrade: one run with --no-holder, or a holder from before
// upgrades (it does not watch SIGUSR2, which would kill it).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>

#include "base/result.h"

namespace uexec::cli {

struct UpgradeDone {
  pid_t holder = 0;
  pid_t before = 0;  // the daemon replaced (0: none was running)
  pid_t after = 0;   // the new one
  std::chrono::milliseconds took{0};
};

// kNotFound: no daemon on `socket_path`; kUnsupported: it cannot upgrade; kLimit: no new
// daemon answered within `wait`.
[[nodiscard]] base::Result<UpgradeDone> upgrade_daemon(const std::string& socket_path, std::chrono::milliseconds wait);

}  // namespace uexec::cli
