// daemon_autostart.h: a client that needs the daemon starts it, as tmux starts its server.
//
// `uexec start` and `uexec mcp --connect` (without an explicit socket) call ensure_daemon()
// before they connect. When no daemon holds the socket's lock (DaemonLock::holder), it runs
// `uexec serve --socket SOCKET` (this same binary, /proc/self/exe) detached: its own session,
// stdin from /dev/null, stdout and stderr to `<socket>.log` (mode 0600, beside the socket, so
// hidden from sandboxes with the socket's directory), plus the words of $UEXEC_AUTOSTART_ARGS
// (e.g. "--no-ws" or "--ws 127.0.0.1:0 --retain-exited 7d"). It then waits until the socket
// accepts a connection, or the daemon exits (a taken port, say: its log's last lines are the
// error), for at most kAutostartWait. UEXEC_AUTOSTART=0 turns it off.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>

#include "base/result.h"

namespace uexec::cli {

inline constexpr std::chrono::seconds kAutostartWait{10};

// The pid of the daemon started for `socket_path`, or 0 when one was running already (or
// autostart is off). An error says why it could not start, with the log's tail.
[[nodiscard]] base::Result<pid_t> ensure_daemon(const std::string& socket_path);

// Where an auto-started daemon writes its log.
inline std::string autostart_log_path(const std::string& socket_path) { return socket_path + ".log"; }

}  // namespace uexec::cli
