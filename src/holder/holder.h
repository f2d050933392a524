// holder.h: the process that keeps the daemon's sessions alive when the daemon dies.
//
// `uexec serve` runs as two processes. The first, the holder, takes the daemon lock, forks the
// daemon proper and then only waits: it is the daemon's parent and a child subreaper, and it
// keeps copies of each running session's fds (the PTY master or the output pipes, the pidfd,
// a sandbox's status pipe, seccomp listener and mask channel) that the daemon sends it as each
// session starts (holder_wire.h's hold; release when it finishes). While the daemon runs, the
// holder does nothing else: output, input and spawn never pass through it.
//
// When the daemon dies by a signal (a crash, kill -9), no terminal is hung up, because the
// holder's copy of each master is still open; no pipe writer gets EPIPE; the sessions' leaders
// re-parent to the holder, which reaps them and keeps their exit status. It then starts the
// binary it was started from again (the same path and arguments; at once, then backing off
// while starts keep failing), and hands every held session to the new daemon (adopt), with
// the statuses of those that ended meanwhile. Sessions whose leaders are its children now
// stay so: it reports their ends to the daemon (exited).
//
// What is lost in a daemon's death: the output the dead daemon had read (its rings; the new
// rings continue at the same seq and offset from a shared counters table, session/seq_mirror.h,
// and the lost bytes are reported as a gap), a pipe session's stdin (the child sees EOF),
// limits' timers, clients' connections (they reconnect and resume). While no daemon runs,
// nothing reads the sessions' output: a process that writes blocks, as on a paused terminal.
// If the holder itself dies, the daemon goes on: it takes the lock itself and runs unheld; the
// leaders that were the holder's children go to init, and their exit statuses are lost (255).
// A machine reboot ends everything; the journal (journal/) keeps what it wrote.
//
// Stopping: SIGTERM, SIGINT or SIGHUP to the holder (`uexec stop` signals the lock's owner,
// which is the holder) is passed to the daemon, which ends its sessions; the holder exits
// with the daemon's status. A daemon that exits on its own (status 0, or an error at start)
// ends the holder too; held sessions left then are terminated.
// Single-threaded; poll(2) on a signalfd and the link. No libuv.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace uexec::holder {

// The environment variable naming a daemon's end of its link (a started-again daemon's).
inline constexpr const char* kLinkEnv = "UEXEC_HOLDER_FD";
// Slots in the counters table (session/seq_mirror.h): at most this many held sessions.
inline constexpr std::size_t kSlots = 16384;

struct HolderOptions {
  std::string exe;                // the binary to start again: its path as this process started
  std::vector<std::string> argv;  // its arguments, argv[0] included
};

// The fork, seen from either side.
struct Forked {
  bool is_daemon = false;
  base::UniqueFd link;  // the daemon's end of the link
  int exit_code = 0;    // the holder's, once it is done (is_daemon false)
};

// Forks the daemon. In the child, returns at once with its link (signals as they were). In
// the parent, runs the holder until the daemon stops for good and returns its exit code.
[[nodiscard]] base::Result<Forked> fork_daemon(const HolderOptions& options);

}  // namespace uexec::holder
