// landlock_read_grant.h: the Landlock-only backend's read grant on "/", split around the paths
// it must keep unreadable (the daemons' control plane; docs/sandbox.md §3.6), and the walk that
// split needs, kept between spawns while the directories it read are unchanged.
//
// Landlock has no deny rule, so "read beneath / except beneath H" is written as: ReadDir only
// on each directory on the way to a path of H, and the full rights on every other entry of
// those directories, found by listing them. That walk (an open and a statx per entry of "/",
// of /root, ... about 45 entries for a registry under ~/.local/state) was most of a
// Landlock-only spawn's planning. It is now done once per hidden set and kept:
//   - kept: for each directory walked, its device, inode and ctime; for each entry to grant,
//     an O_PATH fd on the inode the walk found (entries on another mount than their directory
//     keep their path instead and are reopened per spawn, so the cache pins no mount but those
//     of the directories on the way to the control plane, which the daemon's own state is on);
//   - reused when every directory walked still has the same device, inode and ctime
//     (`lstat`, one per directory). Adding, removing or renaming an entry, or replacing the
//     directory, changes one of them; a walk whose directories changed less than kSettle
//     before it began is used once and not kept (a change within the same timestamp tick
//     would keep the same ctime).
// Best effort, documented: on a file system that does not update a directory's ctime (some
// network and FUSE file systems), a kept walk can outlive a change; it then grants fewer
// names (new entries stay unreadable) or an inode a name used to have, never a hidden path's
// own tree as it stood when walked. One walk is kept per process (the last hidden set), with at
// most kMaxKeptFds fds; a larger walk is redone per spawn. Thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/result.h"

namespace uexec::policy {

// A directory whose ctime is younger than this when a walk begins makes the walk one-off.
constexpr std::chrono::seconds kReadGrantSettle{2};
// At most this many fds are kept for one walk; beyond, nothing is kept.
constexpr std::size_t kMaxKeptFds = 256;

// One rule: `fd` an O_PATH fd on the object (valid for the call only), `path` for messages.
using ReadGrantRule = std::function<base::Result<void>(int fd, bool is_dir, const std::string& path,
                                                       std::uint64_t rights)>;

// Calls `add` once per rule of "`rights` beneath `root` except beneath any of `hidden`": each
// directory on the way to a hidden path gets `rights & list_right`, each of its other entries
// (symlinks skipped) `rights`, a hidden path nothing. kPolicy when the directories on the way
// hold more than `max_entries` entries. `settle`: kReadGrantSettle but in tests.
[[nodiscard]] base::Result<void> for_each_read_grant(const std::string& root, std::uint64_t rights,
                                                     std::uint64_t list_right,
                                                     const std::vector<std::string>& hidden,
                                                     std::size_t max_entries, const ReadGrantRule& add,
                                                     std::chrono::nanoseconds settle = kReadGrantSettle);

// How many walks this process has made (a kept walk reused is not counted). For tests.
std::size_t read_grant_walks() noexcept;

}  // namespace uexec::policy
