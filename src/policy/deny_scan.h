// deny_scan.h: the deny-read entries of a profile, expanded at launch into what the mount
// backends mask (docs/sandbox.md §3.6): every file and directory a glob matches now, at any
// depth and through symlinked directories (the real path is masked), and every other name of
// a hard-linked match under the trees the sandbox writes. A walk over its entry budget, a
// listing that fails, a path past PATH_MAX or a hard link named elsewhere refuses the policy
// (deny_read_index_unavailable, deny_read_hard_link) rather than leave a match unmasked.
// Files made later are the deny-read watcher's (session/deny_watch.h). Reads the file
// system, never changes it. Any thread.
#pragma once

#include <cstddef>
#include <string>

#include "base/result.h"
#include "policy/profile.h"

namespace uexec::policy {

// How many directory entries one deny-read entry's walk (and the hard-link walk) may read.
constexpr std::size_t kMaxScanEntries = 200000;

// Adds one deny-read `entry` (a glob or a path; "~/" is `home`, a relative one is under
// `cwd`): its absolute pattern to r.deny_patterns, what it matches now to r.deny_files and
// r.deny_dirs (real paths).
[[nodiscard]] base::Result<void> add_deny_read(const std::string& entry, const std::string& home,
                                               const std::string& cwd, ResolvedPolicy& r);

// Masks the other names of hard-linked deny-read files found under r.writable and `cwd`;
// refuses one whose names are not all found there.
[[nodiscard]] base::Result<void> mask_hard_links(ResolvedPolicy& r, const std::string& cwd);

}  // namespace uexec::policy
