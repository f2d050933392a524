// linux_sandbox.h: turning a ResolvedPolicy into a launch: the namespace backend and the
// Landlock-only backend (docs/sandbox.md §3).
//
// Namespace backend (LinuxNamespaces). One clone makes pid 1 in new user, mount, pid and
// ipc namespaces (and a new network namespace when the network is off); pid/spawn.cc runs
// our steps there, in order:
//   maps      uid and gid mapped to the manager's own (setgroups denied)
//   view      / recursively slave; clones of the writable roots and host device nodes;
//             / read-only and nosuid (recursive mount_setattr); the writable clones put
//             back nosuid,nodev; private /tmp; carve-outs and stubs as read-only clones of
//             themselves; deny-read and hidden sockets masked by mode-000 files and
//             directories of a detached tmpfs; a fresh /dev (host null, zero, full,
//             random, urandom, tty; a new devpts; the session's PTY at /dev/console;
//             private /dev/shm), made read-only; a fresh /proc. Every mount target is
//             opened with openat2(RESOLVE_NO_SYMLINKS): a symlink swapped in fails the spawn.
//   landlock  the view's own /proc, /dev/pts, /dev/shm, /tmp and the tty join the ruleset
// and in the command's process (pid 2): no_new_privs, securebits locked, bounding and
// ambient sets and every capability dropped; landlock_restrict_self; the seccomp filter.
// pid 1 then becomes uexec-init (sandbox_init.c). Every failure fails the spawn with the
// step and path; the command never runs with less than the policy.
//
// Landlock-only backend (LinuxLandlock, for hosts without user namespaces): the same
// command-process steps on an ordinary spawn, with the Landlock-only ruleset; the seccomp
// filter's notify rules are answered and recorded by the manager (pty/seccomp_listener.h),
// there being no pid 1 of ours. No pid namespace: host pids stay visible, while Landlock's
// scoping keeps signals (ABI 6) and ptrace-guarded /proc files from host processes. It
// refuses profiles it cannot express (deny-read) rather than weakening them.
//
// No separate spawner process yet (docs/sandbox.md §3.2): each spawn
// makes its own user namespace (one clone either way; measured in docs/benchmarks.md).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "policy/profile.h"
#include "pty/spawn.h"

namespace uexec::policy {

// What this host supports, probed once (shown by `uexec sandbox --check`).
struct HostSupport {
  bool userns = false;
  std::string userns_detail;   // why not, when not
  int landlock_abi = 0;
  std::string bwrap;           // "/usr/bin/bwrap" when present and new enough, else empty
  std::string bwrap_version;
  bool init = false;           // uexec-init found and loaded
  std::string init_detail;
};
const HostSupport& host_support();

// uexec-init (sandbox_init.c) as a sealed, executable memfd, made once; shared, never close it.
[[nodiscard]] base::Result<int> sandbox_init_fd();

// Makes the missing protected names (`stubs`) exist as empty directories until the returned
// lease goes: counted by path, removed then if uexec made them and they are still empty.
[[nodiscard]] base::Result<std::shared_ptr<void>> acquire_stubs(const std::vector<std::string>& stubs);

// Adds the namespace backend to `spec` (flags, setup steps, command steps, init, keep).
[[nodiscard]] base::Result<void> add_namespace_sandbox(const ResolvedPolicy& policy, pty::SpawnSpec& spec);

// Adds the Landlock-only backend to `spec`. kPolicy when the profile needs more than it has.
[[nodiscard]] base::Result<void> add_landlock_sandbox(const ResolvedPolicy& policy, pty::SpawnSpec& spec);

}  // namespace uexec::policy
