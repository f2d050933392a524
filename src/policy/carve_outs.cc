#include "policy/carve_outs.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "policy/paths.h"

namespace uexec::policy {

using base::Error;
using base::Result;

namespace {

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
        return Error::policy("SymlinkedCarveOut: " + lex + " (component " + next + " is a symlink inside a writable root)");
      next = real_path(next);
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
    if (auto r = protect_git_path(absolute_path(common, gitdir), writable, read_only, stubs); !r) return r;
  for (const char* name : {"config", "config.worktree", "hooks", "info", "commondir"}) {
    std::string path = gitdir + "/" + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) continue;
    char buf[PATH_MAX];
    ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
    if (n <= 0) continue;
    if (auto r = protect_git_path(absolute_path(std::string(buf, static_cast<std::size_t>(n)), gitdir), writable,
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
  std::string lex = absolute_path(target, dir.empty() ? "/" : dir);
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
    return Error::policy("NestedGitScanUnavailable: more than " + std::to_string(s.max_dirs) +
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
      res = Error::policy("NestedGitScanUnavailable: " + path + " is longer than PATH_MAX");
      break;
    }
    struct stat st {};
    if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) continue;
    if (st.st_nlink == 2) {
      // No subdirectory (ext4, xfs, tmpfs count them in the link count; btrfs says 1): only a
      // `.git` file can be there, and one fstatat finds it where a listing took five calls.
      if (++s.dirs > s.max_dirs) {
        res = Error::policy("NestedGitScanUnavailable: more than " + std::to_string(s.max_dirs) +
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

}  // namespace

Result<void> add_carve_outs(const std::vector<std::string>& extra_names, const std::vector<std::string>& tmp_roots,
                           ResolvedPolicy& r) {
  std::vector<std::string> names(std::begin(kProtectedNames), std::end(kProtectedNames));
  names.insert(names.end(), extra_names.begin(), extra_names.end());
  for (const auto& w : r.writable) {
    bool is_tmp = std::find(tmp_roots.begin(), tmp_roots.end(), w) != tmp_roots.end();
    for (const auto& name : names) {
      std::string path = (w == "/" ? "" : w) + "/" + name;
      struct stat st {};
      if (!path_exists(path, &st)) {
        if (!is_tmp) r.stubs.push_back(path);
        continue;
      }
      if (S_ISLNK(st.st_mode)) return Error::policy("SymlinkedCarveOut: " + path + " is a symlink");
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
      if (S_ISLNK(st.st_mode)) return Error::policy("SymlinkedCarveOut: " + g + " is a symlink");
      if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) continue;
      r.read_only.push_back(g);
      if (auto t = protect_git_targets(g, st, r.writable, r.read_only, r.stubs); !t) return std::move(t).error();
    }
  }
  return {};
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

}  // namespace uexec::policy
