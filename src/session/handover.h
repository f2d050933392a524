// handover.h: a running session as one daemon leaves it to the next (holder/holder.h): what a
// Session is rebuilt from without spawning anything. Its process's fds and pid, the facts
// clients see (command, cwd, name, terminal, sandbox, start), its containment group, and where
// its output's counters stood (seq_mirror.h). After a crash, output the dead daemon had read
// is not here: it becomes a gap. A daemon that hands over on purpose (an upgrade) also carries
// what it held (Carried): the ring, the screen model and input not yet written.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/config.h"
#include "pty/exit_status.h"
#include "pty/pty_process.h"
#include "session/output_ring.h"

namespace uexec::session {

// What only a live daemon can give: written by Session::carry when it hands over for an
// upgrade, read back by Session::adopt, so that nothing it held is lost.
struct Carried {
  RingImage ring;
  std::optional<std::string> screen;  // the screen model's repaint (term::Screen::ansi), if it had one
  std::uint64_t screen_seq = 0;       // the last chunk it had applied
  bool screen_exact = true;
  std::string pending_input;  // input queued for the child and not yet written
  std::optional<pty::ExitStatus> exit;  // reaped by the daemon (a finished session: always)
  std::uint64_t next_seq = 1;           // the seq its next event would have had
  base::PtySize size{};                 // a terminal's size now (the facts have the one it started with)
};

struct Handover {
  std::string id;  // the manager's id (SessionId)
  pid_t pid = -1;
  bool tty = false;
  bool stdin_pipe = false;
  base::PtySize size{};
  std::vector<std::string> argv;
  std::string cwd;
  std::string name;
  bool sandboxed = false;
  std::string sandbox_kind = "none";  // policy::sandbox_kind_name
  bool seccomp = false;
  bool mount_view = false;
  bool pid_namespace = false;  // a supervised sandbox: the kernel empties it with its init
  std::int64_t started_wall_ms = 0;
  std::string cgroup;  // its containment cgroup's directory, or empty
  // Whether `cgroup` is one adopt may take, when ProcessManager::prepare_adopt looked already
  // (an upgrade looks while the daemon before still serves); empty: adopt looks itself.
  std::optional<bool> cgroup_adoptable;
  std::string marker;  // the tracked tier's "UEXEC_SESSION_ID=<id>", or empty
  std::vector<std::string> late_deny;  // deny-read globs masked after launch (fds.mask_requests)
  std::uint64_t next_seq = 1, total = 0, newlines = 0;
  pty::AdoptedFds fds;
  std::optional<pty::ExitStatus> exit;  // it ended while no daemon ran; its holder reaped it
  std::optional<Carried> carried;       // an upgrade's; none after a crash
};

}  // namespace uexec::session
