// landlock.h: the Landlock layer of the Linux sandbox (docs/sandbox.md §3.6).
//
// One ruleset per spawn, built here in the parent from a ResolvedPolicy, applied by the
// child with landlock_restrict_self after no_new_privs. Two uses:
//   - the second layer of the namespace backend: read beneath "/", every right on the
//     writable roots, device nodes, and the view's own /proc, /dev/pts, /dev/shm and private
//     /tmp, which only exist inside the view, so pid 1 adds them (add_view_rules);
//   - the whole file-system boundary of the Landlock-only backend, where carve-outs cannot
//     be denied: a writable root holding carve-outs is split around them, every right on
//     each entry that holds none, read only on each directory on the way to one (stricter:
//     nothing is created, removed or renamed beside a carve-out, so the way to it stays put).
//     Entries are opened relative to their directory without following symlinks and a rule
//     binds the inode opened: a symlink in the workspace never carries a grant to its target,
//     and no rule goes on a device node or on a file with other hard links.
//     Deny-read cannot be expressed at all there: the caller refuses such profiles.
// Handled rights are what the policy wants intersected with the kernel's ABI; ABI 4 adds
// TCP bind/connect (denied with no rules when the network is off), ABI 6 scopes abstract
// unix sockets and signals to the sandbox. The kernel headers of Debian 12 stop at ABI 2, so
// the structs and constants of later ABIs are declared in landlock.cc.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "policy/profile.h"

namespace uexec::policy {

// The running kernel's Landlock ABI (0: none); probed once.
int landlock_abi() noexcept;

// One spawn's ruleset and what the child steps need to extend and apply it.
struct LandlockRuleset {
  base::UniqueFd fd;
  std::uint64_t handled_fs = 0;
  int abi = 0;
  bool private_tmp = false;
};

// Builds this spawn's ruleset. `view`: the namespace backend (carve-outs are mounts);
// otherwise the Landlock-only layout. kPolicy when the split needs more than 4096 rules, when
// a writable root or a directory on the way to a carve-out is now a symlink, or when the
// kernel's ABI is below 2 (BackendUnavailable).
[[nodiscard]] base::Result<LandlockRuleset> landlock_ruleset(const ResolvedPolicy& policy, bool view);

// What the Landlock-only layout keeps out of its read grant (it cannot mask): the daemons'
// control plane, but for paths beneath a writable root, which stay readable.
std::vector<std::string> landlock_unreadable(const ResolvedPolicy& policy);

// Child steps (async-signal-safe); `arg` is a const LandlockRuleset*.
// In pid 1 after the view is built: rules for /proc, /dev/pts, /dev/shm, /dev/console, /tmp.
int landlock_add_view_rules(const void* arg, int tty) noexcept;
// In the command's process: a rule for its own tty (when it has one), then restrict_self.
int landlock_restrict(const void* arg, int tty) noexcept;

}  // namespace uexec::policy
