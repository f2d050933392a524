#include "policy/profile.h"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <sys/inotify.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <sstream>

#include "base/unique_fd.h"
#include "policy/control_registry.h"

namespace uexec::policy {

using base::Errc;
using base::Error;
using base::Result;

const char* sandbox_mode_name(SandboxMode m) noexcept {
  switch (m) {
    case SandboxMode::kReadOnly: return "read-only";
    case SandboxMode::kWorkspaceWrite: return "workspace-write";
    case SandboxMode::kDangerFullAccess: return "danger-full-access";
  }
  return "?";
}

Result<SandboxMode> parse_sandbox_mode(std::string_view s) {
  if (s == "read-only") return SandboxMode::kReadOnly;
  if (s == "workspace-write") return SandboxMode::kWorkspaceWrite;
  if (s == "danger-full-access") return SandboxMode::kDangerFullAccess;
  return Error::invalid("unknown sandbox mode \"" + std::string(s) +
                        "\" (read-only, workspace-write or danger-full-access)");
}

PermissionProfile PermissionProfile::for_mode(SandboxMode mode) {
  PermissionProfile p;
  p.mode = mode;
  p.slash_tmp = mode == SandboxMode::kReadOnly ? TmpPolicy::kNone : TmpPolicy::kHost;
  p.network = mode == SandboxMode::kDangerFullAccess;
  return p;
}

namespace {

constexpr std::size_t kMaxSocketMasks = 256;
constexpr std::size_t kMaxScanEntries = 200000;
// The nested-.git walk of the writable roots runs at every spawn: about two fstatat per leaf
// directory, five calls per other one. Past this many directories a spawn is refused rather
// than run with some `.git` unprotected.
constexpr std::size_t kMaxGitScanDirs = 100000;

Error policy_error(std::string what) { return Error{Errc::kPolicy, 0, std::move(what)}; }

std::string env_get(const std::vector<std::string>& env, std::string_view name) {
  for (const auto& kv : env)
    if (kv.size() > name.size() && kv.compare(0, name.size(), name) == 0 && kv[name.size()] == '=')
      return kv.substr(name.size() + 1);
  return {};
}

std::string own_env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// "/a/./b//c/../d" → "/a/b/d"; `path` must be absolute.
std::string lexical(const std::string& path) {
  std::vector<std::string> parts;
  std::stringstream ss(path);
  std::string part;
  while (std::getline(ss, part, '/')) {
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.push_back(part);
  }
  std::string out;
  for (const auto& p : parts) out += "/" + p;
  return out.empty() ? "/" : out;
}

std::string absolute(const std::string& path, const std::string& base) {
  if (!path.empty() && path[0] == '/') return lexical(path);
  return lexical(base + "/" + path);
}

bool exists(const std::string& p, struct stat* st = nullptr) {
  struct stat s {};
  if (::lstat(p.c_str(), &s) != 0) return false;
  if (st) *st = s;
  return true;
}

std::string real(const std::string& p) {
  char buf[PATH_MAX];
  return ::realpath(p.c_str(), buf) ? std::string(buf) : p;
}


// Does the pattern's component list match the path's? A `**` component matches zero or
// more path components, any other one matches exactly one by fnmatch(3) (flags 0).
// m(pi, si), "pat[pi..] matches path[si..]", by dynamic programming over pi descending,
// one row of S+1 booleans at a time: O(P·S) steps and at most one fnmatch per pair, where
// trying every split of each `**` in turn was exponential in their number.
bool match_parts(const std::vector<std::string_view>& pat, const std::vector<std::string_view>& path) {
  const std::size_t S = path.size();
  std::vector<char> next(S + 1, 0), cur(S + 1, 0);  // m(pi + 1, ·) and m(pi, ·)
  next[S] = 1;                                       // m(P, si): only the empty rest matches
  std::string p, s;
  for (std::size_t pi = pat.size(); pi-- > 0;) {
    if (pat[pi] == "**") {
      cur[S] = next[S];
      for (std::size_t si = S; si-- > 0;) cur[si] = next[si] || cur[si + 1];
    } else {
      cur[S] = 0;
      p.assign(pat[pi]);
      for (std::size_t si = 0; si < S; ++si) {
        cur[si] = 0;
        if (!next[si + 1]) continue;  // the rest cannot match: fnmatch need not run
        s.assign(path[si]);
        cur[si] = ::fnmatch(p.c_str(), s.c_str(), 0) == 0;
      }
    }
    std::swap(next, cur);
  }
  return next[0] != 0;
}

void sort_unique(std::vector<std::string>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

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
using NfaState = std::vector<std::size_t>;  // sorted pattern positions

// Adds `pi` and, while it sits on a `**` (which may match no component), the positions after it.
void nfa_close(const std::vector<std::string_view>& pat, std::size_t pi, NfaState& out) {
  for (;; ++pi) {
    if (std::find(out.begin(), out.end(), pi) == out.end()) out.push_back(pi);
    if (pi >= pat.size() || pat[pi] != "**") break;
  }
}

NfaState nfa_start(const std::vector<std::string_view>& pat) {
  NfaState s;
  nfa_close(pat, 0, s);
  std::sort(s.begin(), s.end());
  return s;
}

// The state after one more path component `name`.
NfaState nfa_step(const std::vector<std::string_view>& pat, const NfaState& from, const std::string& name) {
  NfaState next;
  std::string p;
  for (std::size_t pi : from) {
    if (pi >= pat.size()) continue;
    if (pat[pi] == "**") {
      nfa_close(pat, pi, next);  // `**` takes the component and may take more
      continue;
    }
    p.assign(pat[pi]);
    if (::fnmatch(p.c_str(), name.c_str(), 0) == 0) nfa_close(pat, pi + 1, next);
  }
  std::sort(next.begin(), next.end());
  return next;
}

bool nfa_accepts(const std::vector<std::string_view>& pat, const NfaState& s) {
  return !s.empty() && s.back() == pat.size();
}
bool nfa_alive(const std::vector<std::string_view>& pat, const NfaState& s) {
  return !s.empty() && s.front() < pat.size();
}

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
      rpath = real(rpath);
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
      return policy_error("deny_read_index_unavailable: listing the denied directory " + d + " for hard links went over " +
                          std::to_string(kMaxScanEntries) + " entries");
  if (linked.empty()) return {};
  std::set<dev_t> devs;
  for (const auto& [key, l] : linked) devs.insert(key.first);
  std::vector<std::string> roots = r.writable;
  roots.push_back(real(cwd));
  sort_unique(roots);
  std::set<std::pair<dev_t, ino_t>> walked;
  for (const auto& root : roots) {
    if (root == "/") continue;  // danger-full-access: no tree to walk (a name anywhere is refused below)
    if (!walk_links(root, linked, devs, false, entries, walked))
      return policy_error("deny_read_index_unavailable: looking under " + root + " for the other names of hard-linked "
                          "deny-read files went over " + std::to_string(kMaxScanEntries) + " entries");
  }
  for (const auto& [key, l] : linked) {
    if (l.names.size() < l.nlink)
      return policy_error("deny_read_hard_link: " + *l.names.begin() + " has " + std::to_string(l.nlink) +
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

// An empty directory carrying uexec's stub mark (linux_sandbox.cc's StubRegistry).
bool is_left_stub(const std::string& path, const struct stat& st) {
  if (!S_ISDIR(st.st_mode)) return false;
  char v[4];
  if (::getxattr(path.c_str(), "user.uexec.stub", v, sizeof v) <= 0) return false;
  DIR* d = ::opendir(path.c_str());
  if (!d) return false;
  bool empty = true;
  while (dirent* e = ::readdir(d)) {
    std::string_view n = e->d_name;
    if (n != "." && n != "..") empty = false;
  }
  ::closedir(d);
  return empty;
}

// The writable root `path` lies strictly inside, if any (the innermost one).
const std::string* inside_writable(const std::string& path, const std::vector<std::string>& writable) {
  const std::string* in = nullptr;
  for (const auto& w : writable)
    if (path != w && path_within(path, w) && (!in || w.size() > in->size())) in = &w;
  return in;
}

// Makes the git path `lex` (absolute, lexical) read-only as the host will resolve it later:
// an existing target is a carve-out; a missing one inside a writable root gets a stub at its
// first missing component, so the sandbox cannot create it. A symlink on the way that lies
// inside a writable root is refused: the sandbox could point it elsewhere after launch.
// Symlinks outside the writable roots cannot change under the sandbox and are resolved.
Result<void> protect_git_path(const std::string& lex, const std::vector<std::string>& writable,
                              std::vector<std::string>& read_only, std::vector<std::string>& stubs) {
  std::string prefix;
  auto parts = path_components(lex);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    std::string next = prefix + "/" + std::string(parts[i]);
    struct stat st {};
    if (::lstat(next.c_str(), &st) != 0) {
      if (!inside_writable(next, writable)) return {};  // not writable here: cannot be made
      struct stat parent {};
      if (::stat(prefix.empty() ? "/" : prefix.c_str(), &parent) == 0 && S_ISDIR(parent.st_mode)) stubs.push_back(next);
      return {};
    }
    if (S_ISLNK(st.st_mode)) {
      if (inside_writable(next, writable))
        return policy_error("SymlinkedCarveOut: " + lex + " (component " + next + " is a symlink inside a writable root)");
      next = real(next);
      if (next == "/") next.clear();
    }
    prefix = next;
  }
  read_only.push_back(prefix.empty() ? std::string("/") : prefix);
  return {};
}

// A file of `path` holding one path on its first line (a gitdir file, commondir); empty if none.
std::string first_line(const std::string& path, std::string_view prefix = {}) {
  std::ifstream f(path);
  std::string line;
  if (!std::getline(f, line) || line.rfind(prefix, 0) != 0) return {};
  line.erase(0, prefix.size());
  line.erase(0, line.find_first_not_of(" \t"));
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
  return line;
}

// What git reads through a git directory `gitdir` (already a carve-out) that could lead out of
// it: its commondir, and the entries git follows there when they are symlinks (a prepared
// `.git/config -> ../cfg` would otherwise leave the config writable).
Result<void> protect_gitdir_links(const std::string& gitdir, const std::vector<std::string>& writable,
                                  std::vector<std::string>& read_only, std::vector<std::string>& stubs) {
  if (std::string common = first_line(gitdir + "/commondir"); !common.empty())
    if (auto r = protect_git_path(absolute(common, gitdir), writable, read_only, stubs); !r) return r;
  for (const char* name : {"config", "config.worktree", "hooks", "info", "commondir"}) {
    std::string path = gitdir + "/" + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) continue;
    char buf[PATH_MAX];
    ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
    if (n <= 0) continue;
    if (auto r = protect_git_path(absolute(std::string(buf, static_cast<std::size_t>(n)), gitdir), writable,
                                  read_only, stubs);
        !r)
      return r;
  }
  return {};
}

// A `.git` at `path` (a carve-out already): a directory's links, or a file's "gitdir: X" with X
// (relative to the file's directory) and what X leads to. git follows one gitdir file only.
Result<void> protect_git_targets(const std::string& path, const struct stat& st, const std::vector<std::string>& writable,
                                 std::vector<std::string>& read_only, std::vector<std::string>& stubs) {
  if (S_ISDIR(st.st_mode)) return protect_gitdir_links(path, writable, read_only, stubs);
  if (!S_ISREG(st.st_mode)) return {};
  std::string target = first_line(path, "gitdir:");
  if (target.empty()) return {};
  std::string dir = path.substr(0, path.rfind('/'));
  std::string lex = absolute(target, dir.empty() ? "/" : dir);
  std::size_t before = read_only.size();
  if (auto r = protect_git_path(lex, writable, read_only, stubs); !r) return r;
  if (read_only.size() == before) return {};  // missing: stubbed or out of reach
  std::string gitdir = read_only.back();
  struct stat gst {};
  if (::stat(gitdir.c_str(), &gst) != 0 || !S_ISDIR(gst.st_mode)) return {};
  return protect_gitdir_links(gitdir, writable, read_only, stubs);
}

// Every `.git` strictly below `root` (its own is a protected name), by a walk of directories
// that follows no symlink and does not enter `.git` directories. Bounded: past `max_dirs`
// directories in all, or a path longer than PATH_MAX, kPolicy NestedGitScanUnavailable (no
// depth is skipped silently: a `.git` left unfound would stay writable).
struct GitScan {
  std::size_t dirs = 0;
  std::size_t max_dirs = 0;
  std::vector<std::string> found;
};

Result<void> scan_nested_git(GitScan& s, int dir_fd, const std::string& dir, int depth) {
  if (++s.dirs > s.max_dirs)
    return policy_error("NestedGitScanUnavailable: more than " + std::to_string(s.max_dirs) +
                        " directories in the writable roots (every .git in them must be found)");
  DIR* d = ::fdopendir(dir_fd);
  if (!d) {
    ::close(dir_fd);
    return {};
  }
  Result<void> res;
  while (dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    std::string path = dir + "/" + std::string(name);
    if (name == ".git") {
      if (depth > 0) s.found.push_back(path);
      continue;
    }
    if (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN) continue;
    if (path.size() + sizeof "/.git" > PATH_MAX) {
      res = policy_error("NestedGitScanUnavailable: " + path + " is longer than PATH_MAX");
      break;
    }
    struct stat st {};
    if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) continue;
    if (st.st_nlink == 2) {
      // No subdirectory (ext4, xfs, tmpfs count them in the link count; btrfs says 1): only a
      // `.git` file can be there, and one fstatat finds it where a listing took five calls.
      if (++s.dirs > s.max_dirs) {
        res = policy_error("NestedGitScanUnavailable: more than " + std::to_string(s.max_dirs) +
                           " directories in the writable roots (every .git in them must be found)");
        break;
      }
      std::string git = std::string(e->d_name) + "/.git";
      struct stat gst {};
      if (::fstatat(::dirfd(d), git.c_str(), &gst, AT_SYMLINK_NOFOLLOW) == 0) s.found.push_back(path + "/.git");
      continue;
    }
    int fd = ::openat(::dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    if (res = scan_nested_git(s, fd, path, depth + 1); !res) break;
  }
  ::closedir(d);
  return res;
}

// Directories strictly inside a writable root on the way to each protected path (a carve-out,
// a stub, a writable root nested in another), but not inside a carve-out: renaming one would
// move the protected tree away from the path the host resolves, and let a new tree take it.
std::vector<std::string> pins_for(const ResolvedPolicy& r) {
  std::vector<std::string> pins;
  for (const auto* v : {&r.read_only, &r.stubs, &r.writable})
    for (const auto& p : *v) {
      for (std::size_t cut = p.rfind('/'); cut != std::string::npos && cut > 0; cut = p.rfind('/', cut - 1)) {
        std::string a = p.substr(0, cut);
        if (!inside_writable(a, r.writable)) continue;
        if (std::find(r.writable.begin(), r.writable.end(), a) != r.writable.end()) continue;
        bool covered = false;
        for (const auto* c : {&r.read_only, &r.stubs})
          for (const auto& x : *c) covered = covered || path_within(a, x);
        if (!covered) pins.push_back(a);
      }
    }
  sort_unique(pins);
  return pins;
}

void sweep_sockets(const PermissionProfile& p, ResolvedPolicy& r) {
  std::ifstream f("/proc/net/unix");
  std::string line;
  std::getline(f, line);  // header
  std::vector<std::string> found;
  while (std::getline(f, line)) {
    std::istringstream ls(line);
    std::string num, refcount, proto, flags, type, st, inode, path;
    if (!(ls >> num >> refcount >> proto >> flags >> type >> st >> inode >> path)) continue;
    if (path.empty() || path[0] != '/') continue;  // abstract or unnamed
    unsigned long fl = std::strtoul(flags.c_str(), nullptr, 16);
    if (!(fl & 0x10000)) continue;  // __SO_ACCEPTCON: listening
    found.push_back(path);
  }
  sort_unique(found);
  for (const auto& raw : found) {
    struct stat st {};
    if (::stat(raw.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    std::string path = real(raw);
    bool keep = false;
    for (const auto& w : r.writable) keep = keep || path_within(path, w);
    for (const auto& h : r.hide_dirs) keep = keep || path_within(path, h);
    for (const auto& a : p.allow_unix_sockets) keep = keep || path_within(path, a);
    if (keep) continue;
    if (r.hide_files.size() >= kMaxSocketMasks) {
      r.socket_sweep_truncated = true;
      break;
    }
    r.hide_files.push_back(path);
  }
}

bool in_my_groups(gid_t gid) {
  if (gid == ::getegid()) return true;
  gid_t groups[256];
  int n = ::getgroups(256, groups);
  for (int i = 0; i < n; ++i)
    if (groups[i] == gid) return true;
  return false;
}

// Every live daemon's control plane (control_registry.h): the directories (the registry, and
// each socket's own 0700 directory unless it holds the workspace) and the files (tokens, and
// sockets whose directory cannot be hidden whole). Canonical, existing paths only.
Result<void> control_plane_paths(const ResolveInput& in, const ResolvedPolicy& r, std::vector<std::string>& dirs,
                                 std::vector<std::string>& files) {
  std::string registry = in.registry_dir.empty() ? control_registry_dir() : in.registry_dir;
  struct stat st {};
  if (::stat(registry.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) dirs.push_back(real(registry));
  const std::string cwd = real(in.cwd);
  auto holds_workspace = [&](const std::string& d) {
    for (const auto& w : r.writable)
      if (path_within(w, d)) return true;
    return path_within(cwd, d);
  };
  bool overflow = false;
  auto planes = live_control_planes(in.registry_dir, &overflow);
  if (overflow)
    return policy_error("ControlRegistryFull: " + registry + " holds more than " + std::to_string(kMaxControlPlanes) +
                        " entries; refusing to hide only some daemons");
  for (const auto& plane : planes) {
    if (!plane.socket.empty() && ::stat(plane.socket.c_str(), &st) == 0) {
      std::string sock = real(plane.socket);
      std::string dir = sock.substr(0, sock.rfind('/'));
      struct stat ds {};
      // A daemon's socket directory is its own and 0700 (unix_server.cc); a shared one (/tmp)
      // or one that holds the workspace keeps its other entries: then only the socket goes.
      bool own_dir = !dir.empty() && ::stat(dir.c_str(), &ds) == 0 && ds.st_uid == ::geteuid() &&
                     (ds.st_mode & 0077) == 0;
      if (own_dir && !holds_workspace(dir)) dirs.push_back(dir);
      else files.push_back(sock);
    }
    for (const auto& t : plane.token_files)
      if (::stat(t.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) files.push_back(real(t));
  }
  return {};
}

std::uint64_t fingerprint(const ResolvedPolicy& r) {
  std::uint64_t h = 1469598103934665603ULL;
  auto mix = [&h](std::string_view s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
    h = (h ^ 0xff) * 1099511628211ULL;
  };
  for (const auto* v : {&r.writable, &r.read_only, &r.stubs, &r.pins, &r.deny_files, &r.deny_dirs,
                        &r.hide_dirs, &r.hide_files, &r.control_plane}) {
    for (const auto& s : *v) mix(s);
    mix("|");
  }
  mix(r.full_write ? "W" : "w");
  mix(r.private_tmp ? "T" : "t");
  mix(r.network ? "N" : "n");
  return h;
}

}  // namespace

// Listing a /tmp of a few hundred entries cost 0.25 ms of every sandboxed spawn (ext4's
// hashed readdir), and /tmp changes all the time (every compiler run), so an mtime check
// would rarely let a listing be kept. Instead one inotify watch per process (non-blocking,
// read only here, on demand) reports the names that appear: the listing is kept until an
// `ssh-*` name is created or moved in, the queue overflows, or the directory itself is
// deleted, moved or replaced (another device or inode at the path). Names that go away need
// no new listing: the caller stats every directory anyway. The watch is placed before the
// listing is read, so a name made meanwhile is in the listing or in the queue, or both.
// Without inotify (no instance left: EMFILE, ENOSPC), every call lists.
namespace {

struct SshDirWatch {
  base::UniqueFd fd;
  std::string path;
  dev_t dev = 0;
  ino_t ino = 0;
  std::optional<std::vector<std::string>> dirs;
};

// Drains the queue: is the kept listing still good, stale, or is the watch itself gone?
enum class SshDirEvents { kNone, kNames, kRearm };
SshDirEvents ssh_dir_events(int fd) {
  alignas(inotify_event) char buf[16384];
  SshDirEvents seen = SshDirEvents::kNone;
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) return SshDirEvents::kRearm;
    if (n <= 0) return seen;
    for (char* p = buf; p < buf + n;) {
      const auto* e = reinterpret_cast<const inotify_event*>(p);
      if (e->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT)) return SshDirEvents::kRearm;
      if ((e->mask & IN_Q_OVERFLOW) || (e->len > 0 && std::string_view(e->name).rfind("ssh-", 0) == 0))
        seen = SshDirEvents::kNames;
      p += sizeof(inotify_event) + e->len;
    }
  }
}

}  // namespace

std::vector<std::string> ssh_agent_dirs(const char* tmp) {
  static std::mutex mu;
  static SshDirWatch w;
  struct stat st {};
  if (::stat(tmp, &st) != 0 || !S_ISDIR(st.st_mode)) return {};
  std::lock_guard<std::mutex> lock(mu);
  bool watched = w.fd && w.path == tmp && w.dev == st.st_dev && w.ino == st.st_ino;
  if (watched) {
    SshDirEvents ev = ssh_dir_events(w.fd.get());
    if (ev == SshDirEvents::kNone && w.dirs) return *w.dirs;
    watched = ev != SshDirEvents::kRearm;
  }
  w.dirs.reset();
  if (!watched) {
    w.fd.reset(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    if (w.fd && ::inotify_add_watch(w.fd.get(), tmp, IN_CREATE | IN_MOVED_TO | IN_ONLYDIR) < 0) w.fd.reset();
    w.path = tmp;
    w.dev = st.st_dev;
    w.ino = st.st_ino;
  }
  std::vector<std::string> dirs;
  DIR* d = ::opendir(tmp);
  if (!d) return {};
  while (dirent* e = ::readdir(d))
    if (std::string_view(e->d_name).rfind("ssh-", 0) == 0) dirs.push_back(std::string(tmp) + "/" + e->d_name);
  ::closedir(d);
  if (w.fd) w.dirs = dirs;
  return dirs;
}

bool reachable_without_privilege(const std::string& path) {
  const uid_t me = ::geteuid();
  std::string dir;
  auto parts = path_components(path);
  for (std::size_t i = 0; i + 1 <= parts.size(); ++i) {
    // Search permission on every directory above `path`: "/", then "/a", … (not `path` itself).
    std::string at = dir.empty() ? "/" : dir;
    struct stat st {};
    if (::stat(at.c_str(), &st) != 0) return true;  // cannot tell: keep the mask
    if (st.st_uid != me) {  // our own directory we could chmod: searchable
      char acl[8];
      bool has_acl = ::getxattr(at.c_str(), "system.posix_acl_access", acl, sizeof acl) >= 0 || errno == ERANGE;
      mode_t bit = in_my_groups(st.st_gid) ? S_IXGRP : S_IXOTH;
      if (!has_acl && !(st.st_mode & bit)) return false;
    }
    dir += "/" + std::string(parts[i]);
  }
  return true;
}

Result<std::string> canonical_root(const std::string& path, const std::string& base) {
  std::string abs = absolute(path, base);
  std::string prefix;
  for (auto part : path_components(abs)) {
    prefix += "/" + std::string(part);
    struct stat st {};
    if (::lstat(prefix.c_str(), &st) != 0) {
      if (errno == ENOENT) return policy_error("MissingRoot: " + abs + " does not exist");
      return Error::sys("lstat " + prefix);
    }
    if (S_ISLNK(st.st_mode)) {
      // A system alias (/var/run, /var/lock, usrmerge /bin, /sbin, /lib*; root-owned) resolves
      // silently; any other symlink could be swapped under the sandbox.
      static const char* const kAliases[] = {"/var/run", "/var/lock", "/bin", "/sbin", "/lib",
                                             "/lib32", "/lib64", "/libx32"};
      bool alias = false;
      for (const char* a : kAliases) alias = alias || prefix == a;
      alias = alias && st.st_uid == 0;

      if (!alias) return policy_error("SymlinkedRoot: " + abs + " (component " + prefix + " is a symlink)");
      prefix = real(prefix);
      if (prefix == "/") prefix.clear();
    }
  }
  return prefix.empty() ? std::string("/") : prefix;
}

bool path_within(std::string_view path, std::string_view root) noexcept {
  if (root == "/") return true;
  return path == root ||
         (path.size() > root.size() && path.substr(0, root.size()) == root && path[root.size()] == '/');
}

bool has_glob_chars(std::string_view s) noexcept { return s.find_first_of("*?[") != std::string_view::npos; }

std::vector<std::string_view> path_components(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && s[i] == '/') ++i;
    std::size_t j = s.find('/', i);
    if (j == std::string_view::npos) j = s.size();
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

bool glob_match(std::string_view pattern, std::string_view path) noexcept {
  try {
    return match_parts(path_components(pattern), path_components(path));
  } catch (...) {
    return false;
  }
}

bool glob_may_match_below(std::string_view pattern, std::string_view dir) noexcept {
  try {
    auto pat = path_components(pattern), path = path_components(dir);
    std::string p, s;
    for (std::size_t i = 0; i < path.size(); ++i) {
      if (i >= pat.size()) return false;   // `dir` is deeper than any match
      if (pat[i] == "**") return true;     // any depth below may match the rest
      p.assign(pat[i]);
      s.assign(path[i]);
      if (::fnmatch(p.c_str(), s.c_str(), 0) != 0) return false;
    }
    return pat.size() > path.size();  // components left for an entry below `dir`
  } catch (...) {
    return true;  // out of memory: watching too much is the safe side
  }
}

Result<ResolvedPolicy> resolve(const PermissionProfile& p, const ResolveInput& in) {
  if (in.cwd.empty() || in.cwd[0] != '/') return Error::invalid("sandbox: cwd must be absolute");
  ResolvedPolicy r;
  r.network = p.network && !p.network_hard_deny;
  r.deny_configured = p.has_deny_entries();
  const std::string home = env_get(in.env, "HOME").empty() ? own_env("HOME") : env_get(in.env, "HOME");
  std::vector<std::string> tmp_roots;  // writable, but without protected names

  if (p.mode == SandboxMode::kDangerFullAccess) {
    r.full_write = true;
  } else if (p.mode == SandboxMode::kWorkspaceWrite) {
    auto cwd = canonical_root(in.cwd, "/");
    if (!cwd) return std::move(cwd).error();
    if (p.cwd_writable) r.writable.push_back(*cwd);
    for (const auto& w : p.writable_roots) {
      std::string expanded = (w.rfind("~/", 0) == 0 && !home.empty()) ? home + w.substr(1) : w;
      auto c = canonical_root(expanded, *cwd);
      if (!c) return std::move(c).error();
      r.writable.push_back(*c);
    }
    if (p.slash_tmp == TmpPolicy::kHost) {
      r.writable.push_back("/tmp");
      tmp_roots.push_back("/tmp");
      std::string tmpdir = env_get(in.env, "TMPDIR");
      if (!tmpdir.empty() && exists(tmpdir)) {
        std::string t = real(tmpdir);
        if (!path_within(t, "/tmp")) {
          r.writable.push_back(t);
          tmp_roots.push_back(t);
        }
      }
    } else if (p.slash_tmp == TmpPolicy::kPrivate) {
      r.private_tmp = true;
    }
  }
  sort_unique(r.writable);

  // Protected names directly under each writable root (not /tmp or $TMPDIR: no stubs there).
  std::vector<std::string> names = {".git", ".codex", ".agents", ".uexec"};
  names.insert(names.end(), p.extra_protected_names.begin(), p.extra_protected_names.end());
  for (const auto& w : r.writable) {
    bool is_tmp = std::find(tmp_roots.begin(), tmp_roots.end(), w) != tmp_roots.end();
    for (const auto& name : names) {
      std::string path = (w == "/" ? "" : w) + "/" + name;
      struct stat st {};
      if (!exists(path, &st)) {
        if (!is_tmp) r.stubs.push_back(path);
        continue;
      }
      if (S_ISLNK(st.st_mode)) return policy_error("SymlinkedCarveOut: " + path + " is a symlink");
      if (is_left_stub(path, st)) {
        r.stubs.push_back(path);  // one of ours that a dead manager left: reused, then removed
        continue;
      }
      r.read_only.push_back(path);
      if (name == ".git")
        if (auto g = protect_git_targets(path, st, r.writable, r.read_only, r.stubs); !g) return std::move(g).error();
    }
    if (is_tmp) continue;  // /tmp and $TMPDIR are not walked (other users' trees; see the README)
    GitScan scan{0, kMaxGitScanDirs, {}};
    int fd = ::open(w.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    if (auto sr = scan_nested_git(scan, fd, w == "/" ? "" : w, 0); !sr) return std::move(sr).error();
    for (const auto& g : scan.found) {
      struct stat st {};
      if (::lstat(g.c_str(), &st) != 0) continue;
      if (S_ISLNK(st.st_mode)) return policy_error("SymlinkedCarveOut: " + g + " is a symlink");
      if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) continue;
      r.read_only.push_back(g);
      if (auto t = protect_git_targets(g, st, r.writable, r.read_only, r.stubs); !t) return std::move(t).error();
    }
  }
  for (const auto& ro : p.read_only_paths) {
    std::string path = absolute(ro, in.cwd);
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) r.read_only.push_back(real(path));
  }
  // uexec's config is read-only in every sandbox; its control and state dirs are hidden.
  std::string xdg_config = own_env("XDG_CONFIG_HOME");
  std::string config_dir = !xdg_config.empty() ? xdg_config + "/uexec" : (home.empty() ? "" : home + "/.config/uexec");
  if (!config_dir.empty() && exists(config_dir)) r.read_only.push_back(real(config_dir));

  std::vector<std::string> control_dirs, control_files;
  if (auto cp = control_plane_paths(in, r, control_dirs, control_files); !cp) return std::move(cp).error();
  r.control_plane = control_dirs;
  r.control_plane.insert(r.control_plane.end(), control_files.begin(), control_files.end());
  sort_unique(r.control_plane);
  if (in.masks) {
    std::string runtime = own_env("XDG_RUNTIME_DIR");
    std::string control = !in.control_dir.empty() ? in.control_dir
                          : !runtime.empty()      ? runtime + "/uexec"
                                                  : "/tmp/uexec-" + std::to_string(::getuid());
    std::string xdg_state = own_env("XDG_STATE_HOME");
    std::string state = !xdg_state.empty() ? xdg_state + "/uexec" : (home.empty() ? "" : home + "/.local/state/uexec");
    std::vector<std::string> dirs = {control, state, runtime, env_get(in.env, "XDG_RUNTIME_DIR"),
                                     "/run/libvirt", "/tmp/.X11-unix", "/tmp/.ICE-unix",
                                     "/tmp/tmux-" + std::to_string(::getuid())};
    for (auto& d : ssh_agent_dirs("/tmp")) dirs.push_back(std::move(d));
    for (const auto& d : dirs) {
      struct stat st {};
      if (d.empty() || ::stat(d.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
      std::string c = real(d);
      bool allowed = false;
      for (const auto& a : p.allow_unix_sockets) allowed = allowed || path_within(a, c);
      if (!allowed || c == real(control) || c == real(state)) r.hide_dirs.push_back(c);
    }
    r.hide_dirs.insert(r.hide_dirs.end(), control_dirs.begin(), control_dirs.end());
    sort_unique(r.hide_dirs);
    // A directory inside a hidden one is hidden with it (and could not be masked again).
    for (std::size_t i = 1; i < r.hide_dirs.size();) {
      bool nested = false;
      for (std::size_t j = 0; j < i; ++j) nested = nested || path_within(r.hide_dirs[i], r.hide_dirs[j]);
      if (nested) {
        r.hide_dirs.erase(r.hide_dirs.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
    std::vector<std::string> files = {"/run/docker.sock", "/run/containerd/containerd.sock",
                                      "/run/podman/podman.sock", "/run/dbus/system_bus_socket",
                                      "/run/snapd.socket", env_get(in.env, "SSH_AUTH_SOCK")};
    for (const auto& f : files) {
      struct stat st {};
      if (f.empty() || ::stat(f.c_str(), &st) != 0 || S_ISDIR(st.st_mode)) continue;
      std::string c = real(f);
      bool skip = false;
      for (const auto& h : r.hide_dirs) skip = skip || path_within(c, h);
      for (const auto& a : p.allow_unix_sockets) skip = skip || path_within(c, a);
      if (!skip) r.hide_files.push_back(c);
    }
    sweep_sockets(p, r);
    // A daemon's socket or token is hidden even inside a writable root (the sweep keeps those).
    r.hide_files.insert(r.hide_files.end(), control_files.begin(), control_files.end());
    std::erase_if(r.hide_files, [&r](const std::string& f) {
      for (const auto& h : r.hide_dirs)
        if (path_within(f, h)) return true;
      return false;
    });
  }

  // Deny-read: globs expanded now (a launch-time snapshot), plain paths kept when present.
  for (const auto& g : p.deny_read) {
    std::string pat = (g.rfind("~/", 0) == 0 && !home.empty()) ? home + g.substr(1) : g;
    pat = (pat[0] == '/') ? pat : in.cwd + "/" + pat;
    r.deny_patterns.push_back(has_glob_chars(pat) ? pat : absolute(pat, "/"));
    if (!has_glob_chars(pat)) {
      std::string path = absolute(pat, "/");
      struct stat st {};
      if (::stat(path.c_str(), &st) != 0) continue;  // missing: nothing to mask yet
      (S_ISDIR(st.st_mode) ? r.deny_dirs : r.deny_files).push_back(real(path));
      continue;
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
    if (::stat(base.c_str(), &bst) == 0 && S_ISDIR(bst.st_mode)) scan(s, base, real(base), state);
    if (s.entries > kMaxScanEntries)
      return policy_error("deny_read_index_unavailable: scanning " + base + " for " + g +
                          " went over " + std::to_string(kMaxScanEntries) + " entries");
    if (!s.error.empty())
      return policy_error("deny_read_index_unavailable: scanning " + base + " for " + g + ": " + s.error);
  }
  sort_unique(r.deny_files);
  sort_unique(r.deny_dirs);
  if (auto h = mask_hard_links(r, in.cwd); !h) return std::move(h).error();
  // Deny-read inside a hidden directory is already unreadable (and unreachable to mask).
  for (auto* v : {&r.deny_files, &r.deny_dirs})
    std::erase_if(*v, [&r](const std::string& s) {
      for (const auto& h : r.hide_dirs)
        if (path_within(s, h)) return true;
      return false;
    });
  if (r.private_tmp) {
    // A private /tmp shows nothing of the host's: no masks are needed (or possible) there.
    for (auto* v : {&r.deny_files, &r.deny_dirs, &r.hide_dirs, &r.hide_files})
      std::erase_if(*v, [](const std::string& s) { return path_within(s, "/tmp"); });
  }
  // A mask nobody here could reach protects nothing, and the mount backends could not place
  // it (another user's socket in their 0700 directory: EACCES even to pid 1 of the view).
  for (auto* v : {&r.deny_files, &r.deny_dirs, &r.hide_dirs, &r.hide_files})
    std::erase_if(*v, [](const std::string& s) { return !reachable_without_privilege(s); });
  for (auto* v : {&r.read_only, &r.stubs, &r.deny_files, &r.deny_dirs, &r.hide_files}) sort_unique(*v);
  // A stub inside a carve-out is read-only already (and could not be made there).
  std::erase_if(r.stubs, [&r](const std::string& s) {
    for (const auto& c : r.read_only)
      if (path_within(s, c)) return true;
    return false;
  });
  r.pins = pins_for(r);
  r.fingerprint = fingerprint(r);
  return r;
}

}  // namespace uexec::policy
