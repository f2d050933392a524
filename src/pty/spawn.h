// spawn.h: starting one child, vfork-style, with errors reported synchronously.
//
// Why not uv_spawn: on Linux it is a plain fork, whose cost grows with our page tables, and
// it cannot give the child a controlling tty. We clone(CLONE_VM | CLONE_VFORK) like glibc's
// posix_spawn: the child runs on its own small stack in our memory until execve, the parent
// sleeps until then, so the cost stays flat however large the manager grows.
//
// The child (spawn.cc, child_main) is async-signal-safe: everything it needs is flattened to
// char* arrays beforehand, and it allocates, locks and logs nothing. In order:
//   every disposition to SIG_DFL → setsid → (join the cgroups) → TIOCSCTTY (tty) → stdio on 0/1/2 →
//   close_range(3, ~0U) → chdir → the policy's ChildSteps → empty signal mask → execve
// A failing step leaves {step, errno} in memory we share, so spawn() returns kExecFailed with
// the errno and the step ("chdir /nope", "execve ./x"), never a session that "exits 127".
// (The issue suggests a CLOEXEC pipe for this; with CLONE_VM the child writes straight into
// our memory, which is what glibc's posix_spawn does, and saves a pipe per spawn.)
//
// Supervised mode (a sandbox with its own namespaces, `ns_flags` set): the clone child is
// the namespace's pid 1. It runs `setup_steps` (user maps, the mount view), then clones the
// command's process (pid 2) the same vfork way, which does everything above and execs; then
// pid 1 execs `init_fd` (a tiny static program, sandbox_init.c) with the write end of a
// status pipe on fd 3. init forwards signals to the command, reaps, writes the command's
// wait status to the pipe and exits, and the kernel kills what is left in the namespace.
// pid 1 never keeps a copy of our memory, so a sandboxed session costs a small process.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "pty/file_view.h"

namespace uexec::pty {

// One step a policy backend runs in the child after stdio is in place and before execve
// (Landlock, seccomp, mounts). It must be async-signal-safe and return 0 or an errno.
// `tty` is the PTY slave's fd in the child (-1 for pipes).
struct ChildStep {
  int (*fn)(const void* arg, int tty) noexcept;
  const void* arg;   // built in the parent; must outlive spawn()
  const char* what;  // names the step in the error: "landlock_restrict_self"
  // Where the step may leave what it failed on (a path), for the error's context.
  const char* const* detail = nullptr;
};

// What to run: built by policy::SandboxAttempt::env_for from an ExecRequest.
struct SpawnSpec {
  std::vector<std::string> argv;  // non-empty; argv[0] without '/' is looked up on PATH
  std::string program;            // when set, what to exec instead of argv[0] (argv[0] stays as given)
  std::vector<std::string> env;   // exactly the child's environment, "NAME=value"
  std::string cwd;                // empty: the manager's own cwd
  std::vector<ChildStep> steps;          // in the command's process, after stdio, before execve
  std::vector<int> pass_fds;             // dup'd to 3, 4, … in the command's process (bwrap)
  // A cgroup directory (session/containment.h) the child is born in (clone3
  // CLONE_INTO_CGROUP: nothing to migrate), or, where clone3 cannot be used, joins right after
  // setsid, before anything it runs can fork; -1: none. Not in supervised mode.
  int cgroup_fd = -1;
  // cgroup.procs files (opened for writing) that the first process joins by writing "0",
  // right after setsid: v1 controller hierarchies for the session's limits (containment.h).
  // In supervised mode pid 1 joins them, so the whole namespace is inside.
  std::vector<int> join_cgroups;
  // Supervised mode (see above): CLONE_NEW* flags, steps for pid 1, and the init program.
  unsigned long ns_flags = 0;
  std::vector<ChildStep> setup_steps;
  int init_fd = -1;
  // Supervised mode: a datagram socket from which pid 1, once the command has exec'd, takes
  // at most one fd (SCM_RIGHTS) and hands it to init as fd 4 (the seccomp listener). init
  // keeps the socket as fd 5 and takes mask requests on it (supervisor_protocol.h): the
  // manager sends them on the socket's other end, which `mask_requests` names.
  int supervisor_channel = -1;
  int mask_requests = -1;
  // Supervised mode: pid 1 dies with the manager (PR_SET_PDEATHSIG), so no sandbox runs on
  // unsupervised. False when a holder keeps the sessions for the next manager (holder/).
  bool die_with_manager = true;
  // Unsupervised sandboxes (Landlock-only, bwrap): a datagram socket on which the command
  // sends its seccomp listener before it execs, for PtyProcess to answer
  // (pty/seccomp_listener.h); owned by `keep`. -1: none.
  int seccomp_listener_channel = -1;
  // File records (--log-denials; pty/write_notice.h): the filter holds every open and the
  // calls that change a name, and their listener records the ones this view forbids. Null: none.
  std::shared_ptr<const FileView> file_records;
  std::vector<std::string> late_deny;  // absolute deny-read globs to keep masking after launch
  std::shared_ptr<const void> keep;      // owns whatever the steps' args point into
};

// Where the child's stdio comes from. Exactly one of: `tty` (the PTY slave: it becomes the
// controlling terminal and fds 0, 1 and 2), or the three pipe ends. All fds must be > 2.
struct ChildStdio {
  int tty = -1;
  int in = -1;
  int out = -1;
  int err = -1;
};

struct Spawned {
  pid_t pid = -1;
  base::UniqueFd pidfd;  // from CLONE_PIDFD; invalid on kernels without it
  // Supervised mode: where init writes its records and the command's wait status before it
  // exits (supervisor_protocol.h).
  base::UniqueFd status;
};

// Starts the child as a session leader (and, with a tty, the slave's controlling process).
// Returns once it has exec'd; kExecFailed (with errno and step) if it could not.
[[nodiscard]] base::Result<Spawned> spawn(const SpawnSpec& spec, const ChildStdio& stdio);

// Resolves argv0 the way execvp would, but on `env`'s PATH (else the manager's PATH, else
// /usr/local/bin:/usr/bin:/bin). Names with '/' are returned unchanged. ENOENT when no
// candidate exists, EACCES when one exists but is not executable.
[[nodiscard]] base::Result<std::string> resolve_program(const std::string& argv0,
                                                        const std::vector<std::string>& env,
                                                        const std::string& cwd);

}  // namespace uexec::pty
