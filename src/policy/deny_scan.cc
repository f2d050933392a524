#include "policy/deny_scan.h"

#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "policy/glob.h"
#include "policy/paths.h"

namespace uexec::policy {

using base::Error;
using base::Result;

namespace {

// The deny-read index at launch (docs/sandbox.md §3.6). Each glob is walked from its static
// prefix as an NFA over path components: a state is the set of pattern positions that the
// components so far can have reached, so an entry whose state is empty is never even
// stat'ed, and a directory is walked at most once per (device, inode, state), which is what
// makes following symlinked directories end (a link back to an ancestor arrives in a state
// already seen). No depth bound: the walk is bounded by kMaxScanEntries, past which the policy
// is refused, and by PATH_MAX, past which it is refused too (the kernel could not mount a
// mask there either). Matching uses the path as the command would name it (through the
// symlinks), the mask goes on the real path (the mount backends place masks without
// following symlinks). Hard-linked files are noted for the second pass (LinkedFiles).

// Regular files among the deny-read matches that have more than one name (st_nlink > 1),
// by (device, inode), with the names found so far.
struct LinkedFile {
  nlink_t nlink = 0;
  std::set<std::string> names;
};
using LinkedFiles = std::map<std::pair<dev_t, ino_t>, LinkedFile>;

struct DenyScan {
  const std::vector<std::string_view>* pat;
  std::size_t entries = 0;
  ResolvedPolicy* out;
  LinkedFiles* linked;
  std::set<std::tuple<dev_t, ino_t, NfaState>> seen;
  std::string error;  // set: the index is incomplete, refuse the policy
};

void note_linked(LinkedFiles& linked, const std::string& path, const struct stat& st) {
  if (!S_ISREG(st.st_mode) || st.st_nlink <= 1) return;
  auto& l = linked[{st.st_dev, st.st_ino}];
  l.nlink = st.st_nlink;
  l.names.insert(path);
}

// Can the directory that opendir refused be opened up by the command? Its owner can chmod
// it inside the sandbox (the writable roots are the same inodes); anyone else's stays shut.
bool listable_later(const std::string& dir) {
  struct stat st {};
  return ::stat(dir.c_str(), &st) == 0 && st.st_uid == ::geteuid();
}

void scan(DenyScan& s, const std::string& logical, const std::string& real_dir, const NfaState& state) {
  if (!s.error.empty() || s.entries > kMaxScanEntries) return;
  struct stat dst {};
  if (::stat(real_dir.c_str(), &dst) != 0 || !S_ISDIR(dst.st_mode)) return;
  if (!s.seen.emplace(dst.st_dev, dst.st_ino, state).second) return;  // walked in this state already
  DIR* d = ::opendir(real_dir.c_str());
  if (!d) {
    if (errno == ENOENT || errno == ENOTDIR) return;  // gone meanwhile
    if (errno == EACCES && !listable_later(real_dir)) return;
    s.error = "cannot list " + real_dir + ": " + std::strerror(errno);
    return;
  }
  const auto& pat = *s.pat;
  std::vector<std::tuple<std::string, std::string, NfaState>> dirs;  // (logical, real, state): after closedir
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (++s.entries > kMaxScanEntries) break;
    NfaState next = nfa_step(pat, state, name);
    if (next.empty()) continue;  // nothing below or at this name can match
    std::string lpath = logical == "/" ? "/" + name : logical + "/" + name;
    std::string rpath = real_dir == "/" ? "/" + name : real_dir + "/" + name;
    if (rpath.size() >= PATH_MAX || lpath.size() >= PATH_MAX) {
      s.error = "a path longer than PATH_MAX under " + real_dir;
      break;
    }
    struct stat st {};
    if (::lstat(rpath.c_str(), &st) != 0) continue;
    bool accepts = nfa_accepts(pat, next);
    if (S_ISLNK(st.st_mode)) {
      // What the command reads through the link: its target, under the link's name (resolved
      // only when it is masked or walked: most links are neither).
      if (::stat(rpath.c_str(), &st) != 0) continue;  // dangling: nothing to read now
      if (!accepts && !(S_ISDIR(st.st_mode) && nfa_alive(pat, next))) continue;
      rpath = real_path(rpath);
    }
    if (accepts) {
      (S_ISDIR(st.st_mode) ? s.out->deny_dirs : s.out->deny_files).push_back(rpath);
      if (s.linked) note_linked(*s.linked, rpath, st);
      if (S_ISDIR(st.st_mode)) continue;  // a masked directory hides everything below it
    }
    if (S_ISDIR(st.st_mode) && nfa_alive(pat, next))
      dirs.emplace_back(std::move(lpath), std::move(rpath), std::move(next));
  }
  ::closedir(d);
  for (const auto& [l, r, st] : dirs) scan(s, l, r, st);
}

// Every name of a hard-linked deny-read file under `root` (not following symlinks, not
// leaving the file system of the files looked for), and the regular files with more than
// one name inside a denied directory (`collect`). False when the walk went over budget.
bool walk_links(const std::string& root, LinkedFiles& linked, const std::set<dev_t>& devs, bool collect,
                std::size_t& entries, std::set<std::pair<dev_t, ino_t>>& seen) {
  std::vector<std::string> todo = {root};
  while (!todo.empty()) {
    std::string dir = std::move(todo.back());
    todo.pop_back();
    struct stat dst {};
    if (::lstat(dir.c_str(), &dst) != 0 || !S_ISDIR(dst.st_mode)) continue;
    if (!collect && !devs.count(dst.st_dev)) continue;
    if (!seen.emplace(dst.st_dev, dst.st_ino).second) continue;
    DIR* d = ::opendir(dir.c_str());
    if (!d) continue;
    while (dirent* e = ::readdir(d)) {
      std::string_view name = e->d_name;
      if (name == "." || name == "..") continue;
      if (++entries > kMaxScanEntries) {
        ::closedir(d);
        return false;
      }
      if (e->d_type != DT_UNKNOWN && e->d_type != DT_DIR && e->d_type != DT_REG) continue;
      std::string path = dir == "/" ? "/" + std::string(name) : dir + "/" + std::string(name);
      struct stat st {};
      if (::lstat(path.c_str(), &st) != 0) continue;
      if (S_ISDIR(st.st_mode)) {
        todo.push_back(std::move(path));
      } else if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
        if (collect) {
          note_linked(linked, path, st);
        } else if (auto it = linked.find({st.st_dev, st.st_ino}); it != linked.end()) {
          it->second.names.insert(path);
        }
      }
    }
    ::closedir(d);
  }
  return true;
}

}  // namespace

Result<void> add_deny_read(const std::string& entry, const std::string& home, const std::string& cwd,
                          ResolvedPolicy& r) {
  std::string pat = (entry.rfind("~/", 0) == 0 && !home.empty()) ? home + entry.substr(1) : entry;
  pat = (pat[0] == '/') ? pat : cwd + "/" + pat;
  r.deny_patterns.push_back(has_glob_chars(pat) ? pat : absolute_path(pat, "/"));
  if (!has_glob_chars(pat)) {
    std::string path = absolute_path(pat, "/");
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return {};  // missing: nothing to mask yet
    (S_ISDIR(st.st_mode) ? r.deny_dirs : r.deny_files).push_back(real_path(path));
    return {};
  }
  auto parts = path_components(pat);
  std::string base;
  std::size_t fixed = 0;
  for (auto part : parts) {
    if (has_glob_chars(part)) break;
    base += "/" + std::string(part);
    ++fixed;
  }
  if (base.empty()) base = "/";
  NfaState state = nfa_start(parts);
  for (std::size_t i = 0; i < fixed; ++i) state = nfa_step(parts, state, std::string(parts[i]));
  DenyScan s{&parts, 0, &r, nullptr, {}, {}};
  struct stat bst {};
  if (::stat(base.c_str(), &bst) == 0 && S_ISDIR(bst.st_mode)) scan(s, base, real_path(base), state);
  if (s.entries > kMaxScanEntries)
    return Error::policy("deny_read_index_unavailable: scanning " + base + " for " + entry + " went over " + std::to_string(kMaxScanEntries) + " entries");
  if (!s.error.empty())
    return Error::policy("deny_read_index_unavailable: scanning " + base + " for " + entry + ": " + s.error);
  return {};
}

// Hard links (docs/sandbox.md §3.6): a mask covers one name, and every other name of a
// denied file reads the same inode. The other names under the trees a sandbox writes
// (the writable roots and the cwd) are found and masked too; a file with a name that is
// not found there is refused, since that name would stay readable.
Result<void> mask_hard_links(ResolvedPolicy& r, const std::string& cwd) {
  LinkedFiles linked;
  std::size_t entries = 0;
  std::set<std::pair<dev_t, ino_t>> seen;
  for (const auto& f : r.deny_files) {
    struct stat st {};
    if (::stat(f.c_str(), &st) == 0) note_linked(linked, f, st);
  }
  // Files inside a denied directory are hidden with it, but their other names are not.
  for (const auto& d : r.deny_dirs)
    if (!walk_links(d, linked, {}, true, entries, seen))
      return Error::policy("deny_read_index_unavailable: listing the denied directory " + d + " for hard links went over " +
                          std::to_string(kMaxScanEntries) + " entries");
  if (linked.empty()) return {};
  std::set<dev_t> devs;
  for (const auto& [key, l] : linked) devs.insert(key.first);
  std::vector<std::string> roots = r.writable;
  roots.push_back(real_path(cwd));
  sort_unique(roots);
  std::set<std::pair<dev_t, ino_t>> walked;
  for (const auto& root : roots) {
    if (root == "/") continue;  // danger-full-access: no tree to walk (a name anywhere is refused below)
    if (!walk_links(root, linked, devs, false, entries, walked))
      return Error::policy("deny_read_index_unavailable: looking under " + root + " for the other names of hard-linked "
                          "deny-read files went over " + std::to_string(kMaxScanEntries) + " entries");
  }
  for (const auto& [key, l] : linked) {
    if (l.names.size() < l.nlink)
      return Error::policy("deny_read_hard_link: " + *l.names.begin() + " has " + std::to_string(l.nlink) +
                          " hard links and only " + std::to_string(l.names.size()) +
                          " are under the writable roots or the cwd; another name would stay readable (find it "
                          "with `find / -xdev -samefile " + *l.names.begin() + "`, then remove it or deny it too)");
    for (const auto& n : l.names) {
      bool hidden = false;
      for (const auto& d : r.deny_dirs) hidden = hidden || path_within(n, d);
      if (!hidden) r.deny_files.push_back(n);
    }
  }
  return {};
}

}  // namespace uexec::policy
