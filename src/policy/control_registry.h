// control_registry.h: where every live uexec daemon of this user keeps its control plane.
//
// A sandbox must never reach the control plane that made it, nor that of any other uexec
// daemon of the same user: its token files, its Unix socket and its WebSocket listener. A
// daemon can put those anywhere (`--socket`, `--token-file`), so a sandbox started by another
// uexec process (the CLI, an exec-server, another daemon) could not know them from its own
// flags. Each daemon therefore writes one entry into a per-user registry when it starts and
// removes it when it stops; resolve() (profile.h) reads every live entry and hides those
// paths in every backend (docs/sandbox.md, "control plane").
//
// The registry is `<home>/.local/state/uexec/daemons`, with <home> the user's passwd entry,
// never $HOME or XDG variables: every process of the user must find the same directory
// whatever its environment. The directory is 0700 and ours (another user's, or a symlink,
// is refused); an entry is `<pid>.json`, written to a temporary name and renamed, holding
// the pid, the process's start time (so a reused pid is not mistaken for the daemon), the
// socket, the token files (canonical paths) and the TCP ports. An entry whose process is
// gone is stale: the reader removes it (one whose pid now runs another process is skipped).
// The registry itself is hidden from every sandbox too, so a sandboxed command cannot delete
// an entry to unhide a daemon from later sandboxes.
//
// Without a passwd home it is /tmp/uexec-$UID-daemons.
//
// Daemons started after a sandbox are not hidden from it: masks are made at launch. The TCP
// ports are recorded but not enforced: with the network off no sandbox can connect at all
// (a network namespace, Landlock's TCP rules, seccomp), and with it on the port answers 401
// without the hidden token. Landlock can only allow ports, and a ruleset allowing all 65534
// others cost 1.2 s to build and 180-430 ms per landlock_restrict_self here.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

#include "base/result.h"

namespace uexec::policy {

// One daemon's control plane: what no sandbox may reach.
struct ControlPlane {
  pid_t pid = 0;
  unsigned long long start_time = 0;     // /proc/<pid>/stat field 22 (clock ticks since boot)
  std::string socket;                    // the Unix socket (absolute), or empty
  std::vector<std::string> token_files;  // absolute
  std::vector<int> tcp_ports;            // WebSocket listeners
  std::vector<std::string> private_dirs; // absolute: what it keeps of its sessions (the journal)
};

// The lock a daemon holds beside its socket while it runs (cli/daemon_lock.h): part of the
// control plane, hidden with the socket, since a sandbox holding it would keep every later
// daemon on that socket from starting.
inline std::string socket_lock_path(const std::string& socket) { return socket + ".lock"; }
// The web terminal's URL (with its token) a daemon writes beside its socket for `uexec url`;
// registered with the token files, hidden like them.
inline std::string socket_url_path(const std::string& socket) { return socket + ".url"; }

// The registry directory for the real uid: "<passwd home>/.local/state/uexec/daemons".
std::string control_registry_dir();

// Where journals go by default (journal/journal_format.h): $XDG_STATE_HOME/uexec/journal when
// XDG_STATE_HOME is absolute, else journal_root_beside(control_registry_dir()).
std::string default_journal_root();
// The journal directory in the same state directory as the registry `registry_dir`
// (".../uexec/daemons" -> ".../uexec/journal"; the /tmp fallback "-daemons" -> "-journal").
std::string journal_root_beside(const std::string& registry_dir);

// When process `pid` started: field 22 of /proc/<pid>/stat (clock ticks since boot); 0 when it
// is gone. A pid with another start time than the one recorded is another process.
unsigned long long process_start_time(pid_t pid);
// mkdir -p with mode 0700 for the components it creates; `dir` itself must end up ours and
// 0700 (a looser mode is tightened; a symlink or another user's directory is refused).
[[nodiscard]] base::Result<void> private_dir(const std::string& dir);

// This process's entry for as long as the object lives (RAII: the destructor removes it).
class ControlRegistration {
 public:
  ControlRegistration() = default;
  ControlRegistration(ControlRegistration&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
  ControlRegistration& operator=(ControlRegistration&& o) noexcept;
  ControlRegistration(const ControlRegistration&) = delete;
  ControlRegistration& operator=(const ControlRegistration&) = delete;
  ~ControlRegistration();

  // Writes `plane` (its pid and start time are this process's) into `dir` (default: the registry).
  [[nodiscard]] static base::Result<ControlRegistration> add(ControlPlane plane, std::string dir = {});
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

// Every live entry of `dir` (default: the registry), stale ones removed on the way. A
// missing registry has no entries; an unreadable, malformed or oversized (> 64 KiB) entry is
// skipped. More than kMaxControlPlanes entries sets `*overflow` (when given): the caller
// must then refuse rather than hide only some (entries could be planted to push one out).
constexpr std::size_t kMaxControlPlanes = 256;
std::vector<ControlPlane> live_control_planes(const std::string& dir = {}, bool* overflow = nullptr);

}  // namespace uexec::policy
