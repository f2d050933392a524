// paths.h: paths as the sandbox policy reads them: lexical and canonical forms, "is this
// beneath that", and whether a path is reachable at all without privilege. Every list of a
// ResolvedPolicy holds canonical absolute paths made by these. They read the file system
// (lstat, realpath, stat), never change it. Any thread.
#pragma once

#include <sys/stat.h>

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace uexec::policy {

// "/a/./b//c/../d" → "/a/b/d"; `path` must be absolute.
std::string lexical_path(const std::string& path);
// `path` made absolute against `base` (when relative), then lexical.
std::string absolute_path(const std::string& path, const std::string& base);
// realpath(3) of `p`, or `p` itself when it cannot be resolved.
std::string real_path(const std::string& p);
// lstat(2) succeeds; its result in `*st` when given.
bool path_exists(const std::string& p, struct stat* st = nullptr);
// Sorts `v` and drops repeats.
void sort_unique(std::vector<std::string>& v);

// Canonical form of `path` (absolute, or relative to `base`): kPolicy "SymlinkedRoot …" when a
// component is a symlink that is not a root-owned system alias, "MissingRoot …" when absent.
[[nodiscard]] base::Result<std::string> canonical_root(const std::string& path, const std::string& base);

// Could a process of this uid and groups, with no capabilities, look up `path`? False only
// when a directory on the way is another user's and denies search to us by its mode bits
// (one with an ACL counts as searchable). Used to drop masks that protect nothing.
bool reachable_without_privilege(const std::string& path);

// Is `path` equal to `root` or beneath it, by components ("/a/bc" is not beneath "/a/b")?
bool path_within(std::string_view path, std::string_view root) noexcept;
// Does `s` (a path or a component) contain glob characters ('*', '?', '[')?
bool has_glob_chars(std::string_view s) noexcept;
// The non-empty components of `path`: "/a//b/" gives {"a", "b"}. Views into `path`.
std::vector<std::string_view> path_components(std::string_view path);

}  // namespace uexec::policy
