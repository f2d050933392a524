#include "policy/paths.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>

namespace uexec::policy {

using base::Error;
using base::Result;

// "/a/./b//c/../d" → "/a/b/d"; `path` must be absolute.
std::string lexical_path(const std::string& path) {
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

std::string absolute_path(const std::string& path, const std::string& base) {
  if (!path.empty() && path[0] == '/') return lexical_path(path);
  return lexical_path(base + "/" + path);
}

bool path_exists(const std::string& p, struct stat* st) {
  struct stat s {};
  if (::lstat(p.c_str(), &s) != 0) return false;
  if (st) *st = s;
  return true;
}

std::string real_path(const std::string& p) {
  char buf[PATH_MAX];
  return ::realpath(p.c_str(), buf) ? std::string(buf) : p;
}

void sort_unique(std::vector<std::string>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}


namespace {

bool in_my_groups(gid_t gid) {
  if (gid == ::getegid()) return true;
  gid_t groups[256];
  int n = ::getgroups(256, groups);
  for (int i = 0; i < n; ++i)
    if (groups[i] == gid) return true;
  return false;
}

}  // namespace

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
  std::string abs = absolute_path(path, base);
  std::string prefix;
  for (auto part : path_components(abs)) {
    prefix += "/" + std::string(part);
    struct stat st {};
    if (::lstat(prefix.c_str(), &st) != 0) {
      if (errno == ENOENT) return Error::policy("MissingRoot: " + abs + " does not exist");
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

      if (!alias) return Error::policy("SymlinkedRoot: " + abs + " (component " + prefix + " is a symlink)");
      prefix = real_path(prefix);
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

}  // namespace uexec::policy
