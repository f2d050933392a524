// carve_outs.h: what stays read-only inside the writable roots (docs/sandbox.md §1.4), and
// what keeps it where the host will look for it.
//   - The protected names (.git, .codex, .agents, .uexec and the profile's extra names)
//     directly under each writable root: existing ones are carve-outs (read-only), missing
//     ones stubs (made read-only by the backend so they cannot be created); a protected name
//     that is a symlink is refused (SymlinkedCarveOut).
//   - Every `.git` deeper in a writable root that exists at launch, found by a walk that
//     follows no symlink (bounded: past kMaxGitScanDirs directories or PATH_MAX the run is
//     refused, NestedGitScanUnavailable; no depth is skipped silently). A `.git` file's gitdir
//     target and its commondir, and the symlinks git follows inside a git directory (config,
//     hooks, info …), are carve-outs too; a missing one inside a writable root is stubbed,
//     one reached through a symlink inside a writable root is refused.
//   - Pins: the directories on the way to a carve-out, a stub or a nested writable root; the
//     mount backends make each a mount point of itself, so no rename moves the protected tree.
// /tmp and $TMPDIR get no stubs and are not walked (other users' trees). Reads the file
// system, never changes it. Any thread.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "base/result.h"
#include "policy/profile.h"

namespace uexec::policy {

// The nested-.git walk of the writable roots runs at every spawn: about two fstatat per leaf
// directory, five calls per other one. Past this many directories a spawn is refused rather
// than run with some `.git` unprotected.
constexpr std::size_t kMaxGitScanDirs = 100000;

// The names kept read-only directly under every writable root (beside a profile's extra ones).
inline constexpr const char* kProtectedNames[] = {".git", ".codex", ".agents", ".uexec"};

// Adds to r.read_only and r.stubs the protected names (the four and `extra_names`) under each
// of r.writable, every nested `.git` and what it leads to; `tmp_roots` (among r.writable) get
// neither stubs nor the walk.
[[nodiscard]] base::Result<void> add_carve_outs(const std::vector<std::string>& extra_names,
                                                const std::vector<std::string>& tmp_roots, ResolvedPolicy& r);

// The pins of `r` (its writable roots, carve-outs and stubs final), sorted.
std::vector<std::string> pins_for(const ResolvedPolicy& r);

}  // namespace uexec::policy
