// bwrap.h: the bubblewrap backend (LinuxBwrap, docs/sandbox.md §3.9): an argv builder.
//
// One exec per spawn: the uexec child does setsid, the controlling tty and the signal reset,
// then execs /usr/bin/bwrap, whose own pid 1 runs the command. The argv is built in a fixed
// order (golden-tested in tests/golden/bwrap/):
//   --die-with-parent --unshare-user --unshare-pid --unshare-ipc [--unshare-net]
//   --disable-userns --ro-bind / / --dev /dev --proc /proc [--perms 1777 --tmpfs /tmp]
//   --bind W W …  --bind P P … (pins)  --ro-bind-try C C …  --perms 0555 --tmpfs S --remount-ro S …
//   --perms 0000 --tmpfs D --remount-ro D … (deny-read and hidden directories)
//   --ro-bind MASK F … (deny-read files and hidden sockets)
//   --cap-drop ALL --chdir CWD --seccomp 3 -- COMMAND…
// No --new-session: the PTY stays the controlling terminal for job control, and the seccomp
// filter blocks TIOCSTI instead. When uexec-init is available the filter is not bwrap's
// --seccomp: bwrap runs `/proc/self/fd/3 --exec 4 5 6 -- COMMAND…` (uexec-init, fd 3), which
// loads the notify flavour (fd 4; the errno flavour, fd 5, under an outer listener) and sends
// its listener over fd 6 to the manager, which answers and records the denials
// (pty/seccomp_listener.h) as the namespace backend's pid 1 does; otherwise bwrap loads the
// errno flavour from fd 3 and nothing is recorded. Either way the filter is in place before
// the command's first instruction; with uexec-init, bwrap's own reaper (its pid 1, which runs
// none of the command's code) is not filtered. Choices of our own:
// masked files are bound from one empty mode-000 file in uexec's hidden control directory
// instead of one --ro-bind-data fd each (hundreds of sockets would need hundreds of fds);
// no --json-status-fd yet, so a bwrap setup failure surfaces as bwrap's exit 1 and its text.
// bwrap masks at launch only: deny-read files created later stay readable.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "policy/profile.h"
#include "pty/spawn.h"

namespace uexec::policy {

struct BwrapInput {
  std::string bwrap = "/usr/bin/bwrap";
  std::string cwd;
  std::string mask_file;  // an empty, mode-000 file (the bind source of file masks)
  int seccomp_fd = 3;     // where bwrap finds the BPF program; -1: no --seccomp (the command
                          // is `uexec-init --exec`, which loads the filter itself)
  std::vector<std::string> command;
};

// Pure: the full argv for `policy` (golden-tested).
std::vector<std::string> bwrap_argv(const ResolvedPolicy& policy, const BwrapInput& in);

// Wraps `spec` (argv already set) in bwrap; kPolicy BackendUnavailable without bwrap 0.8+.
[[nodiscard]] base::Result<void> add_bwrap_sandbox(const ResolvedPolicy& policy, const std::string& cwd,
                                                   pty::SpawnSpec& spec);

}  // namespace uexec::policy
