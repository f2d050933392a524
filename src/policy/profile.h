// profile.h: what a sandbox allows (PermissionProfile) and what that means on this host
// (ResolvedPolicy): canonical paths, carve-outs, masks.
//
// A profile is what a person or a client asks for: a mode (read-only, workspace-write,
// danger-full-access), extra writable roots, deny-read globs, network on or off. resolve()
// turns it into concrete, canonical lists for one spawn, following docs/sandbox.md §1:
//   - every writable root is canonical, exists, and has no symlink component except the
//     root-owned system aliases (/var/run, usrmerge /bin …): SymlinkedRoot / MissingRoot;
//   - the protected names (.git, .codex, .agents, .uexec + extra) directly under each
//     writable root are read-only: existing ones as carve-outs, missing ones as stubs that
//     the backend makes read-only so they cannot be created; a protected name that is a
//     symlink is refused;
//   - every `.git` (directory or file) deeper in a writable root that exists at launch is a
//     carve-out too: git run on the host anywhere below it would use it (a bounded walk,
//     refused past its bound: NestedGitScanUnavailable). A `.git` file's gitdir target and
//     the commondir it names are carve-outs as well; a missing one inside a writable root
//     becomes a stub (so it cannot be made later), and one whose path runs through a
//     symlink inside a writable root is refused (SymlinkedCarveOut: the link could be
//     retargeted after launch). `.git` made later by the sandbox itself is not protected;
//   - pins: every directory inside a writable root on the way to a carve-out, a stub or a
//     nested writable root. The mount backends make each a mount point of itself, which
//     cannot be renamed (EBUSY), so the path the host resolves later still leads to the
//     protected tree (a rename-and-replace of `modules/` above a gitdir otherwise would not);
//   - deny-read globs are expanded at launch, into files and directories: at any depth,
//     through symlinked directories (the real path is masked), with every other name of a
//     hard-linked match under the writable roots and the cwd; a walk over its entry budget,
//     or a hard link named elsewhere, refuses the policy (deny_read_index_unavailable,
//     deny_read_hard_link) rather than leave a match unmasked;
//   - uexec's own control and state directories, $XDG_RUNTIME_DIR and every listening
//     pathname socket outside the writable roots are hidden (docs/sandbox.md §3.5);
//   - so is the control plane of every live uexec daemon of this user, wherever it lives
//     (control_registry.h): its socket (and the socket's directory), its token files, and
//     the registry itself; `control_plane` lists them for a backend that cannot mask;
//   - a mask whose target no process of this uid without capabilities could reach (a
//     directory of another user on the way denies search) is dropped: it protects nothing
//     and the mount backends could not place it.
// Pure policy: reads the file system, never changes it, knows no backend. resolve() is in
// profile.cc; its parts, one concern each: carve_outs.h (protected names, every .git, pins),
// hidden_paths.h (control planes, host sockets), deny_scan.h (deny-read globs, hard links),
// over glob.h and paths.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "policy/paths.h"

namespace uexec::policy {

enum class SandboxMode { kReadOnly, kWorkspaceWrite, kDangerFullAccess };
const char* sandbox_mode_name(SandboxMode m) noexcept;  // "workspace-write"
[[nodiscard]] base::Result<SandboxMode> parse_sandbox_mode(std::string_view s);

// /tmp (and $TMPDIR when it lies elsewhere): the host's, a private tmpfs, or not writable.
enum class TmpPolicy { kHost, kPrivate, kNone };

struct PermissionProfile {
  SandboxMode mode = SandboxMode::kWorkspaceWrite;
  std::vector<std::string> writable_roots;         // beyond :cwd (workspace-write only)
  std::vector<std::string> deny_read;              // globs or paths; relative ones anchor at cwd
  bool network = false;                            // false: restricted
  bool network_hard_deny = false;                  // no retry may add network
  TmpPolicy slash_tmp = TmpPolicy::kHost;          // read-only mode ignores it (none)
  std::vector<std::string> extra_protected_names;  // e.g. ".aws"
  std::vector<std::string> allow_unix_sockets;     // never hidden
  std::vector<std::string> read_only_paths;        // extra carve-outs (Codex clients send their own)
  bool cwd_writable = true;                        // workspace-write: :cwd is a writable root

  static PermissionProfile for_mode(SandboxMode mode);
  bool has_deny_entries() const noexcept { return !deny_read.empty(); }
  // danger-full-access with the network on and no deny entries: nothing to enforce.
  bool unrestricted() const noexcept {
    return mode == SandboxMode::kDangerFullAccess && deny_read.empty() && network;
  }
};

// One spawn's policy in concrete, canonical paths. Lists are sorted; `writable` parents first.
struct ResolvedPolicy {
  bool full_write = false;               // danger-full-access with deny entries: "/" writable
  std::vector<std::string> writable;     // bind read-write
  std::vector<std::string> read_only;    // existing carve-outs inside writable roots
  std::vector<std::string> stubs;        // missing protected names: made read-only stubs
  std::vector<std::string> pins;         // on the way to a carve-out, stub or nested root: made immovable
  std::vector<std::string> deny_patterns; // every deny-read entry, absolute (globs kept)
  std::vector<std::string> deny_files;   // deny-read matches at launch
  std::vector<std::string> deny_dirs;
  std::vector<std::string> hide_dirs;    // masked by an empty, mode-000 directory
  std::vector<std::string> hide_files;   // sockets masked by an empty, mode-000 file
  std::vector<std::string> control_plane; // live daemons' token files, socket dirs and the registry
  bool private_tmp = false;              // a fresh tmpfs on /tmp
  bool network = false;
  bool socket_sweep_truncated = false;   // more than 256 host sockets: the rest stay visible
  bool deny_configured = false;          // the profile has deny-read entries (matching or not)
  std::uint64_t fingerprint = 0;         // of every list above; the cache key for plans

  bool has_deny() const noexcept { return !deny_files.empty() || !deny_dirs.empty(); }
};

struct ResolveInput {
  std::string cwd;                       // sandbox_policy_cwd; absolute
  std::vector<std::string> env;          // the request's env ("NAME=value"): HOME, TMPDIR, …
  std::string control_dir;               // the daemon's socket dir; empty: the default
  bool masks = true;                     // hidden sockets and dirs (a backend that cannot mask skips them)
  std::string registry_dir = {};         // the daemons' registry; empty: control_registry_dir()
};

[[nodiscard]] base::Result<ResolvedPolicy> resolve(const PermissionProfile& profile,
                                                   const ResolveInput& in);

}  // namespace uexec::policy
