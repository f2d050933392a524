#include "policy/landlock.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <vector>

#include "policy/landlock_read_grant.h"

namespace uexec::policy {

using base::Errc;
using base::Error;
using base::Result;
using base::UniqueFd;

namespace {

// The uapi of Landlock up to ABI 7 (linux/landlock.h on Debian 12 stops at ABI 2).
struct RulesetAttr {
  std::uint64_t handled_access_fs;
  std::uint64_t handled_access_net;
  std::uint64_t scoped;
};
struct PathBeneathAttr {
  std::uint64_t allowed_access;
  std::int32_t parent_fd;
} __attribute__((packed));

constexpr int kRulePathBeneath = 1;
constexpr unsigned kCreateRulesetVersion = 1U << 0;

constexpr std::uint64_t kExecute = 1ULL << 0, kWriteFile = 1ULL << 1, kReadFile = 1ULL << 2,
                        kReadDir = 1ULL << 3, kRemoveDir = 1ULL << 4, kRemoveFile = 1ULL << 5,
                        kMakeChar = 1ULL << 6, kMakeDir = 1ULL << 7, kMakeReg = 1ULL << 8,
                        kMakeSock = 1ULL << 9, kMakeFifo = 1ULL << 10, kMakeBlock = 1ULL << 11,
                        kMakeSym = 1ULL << 12, kRefer = 1ULL << 13, kTruncate = 1ULL << 14,
                        kIoctlDev = 1ULL << 15;
constexpr std::uint64_t kNetBindTcp = 1ULL << 0, kNetConnectTcp = 1ULL << 1;
constexpr std::uint64_t kScopeAbstractUnix = 1ULL << 0, kScopeSignal = 1ULL << 1;

constexpr std::uint64_t kFileRights = kExecute | kWriteFile | kReadFile | kTruncate | kIoctlDev;
constexpr std::size_t kMaxSiblings = 4096;

std::uint64_t all_fs(int abi) {
  std::uint64_t r = kExecute | kWriteFile | kReadFile | kReadDir | kRemoveDir | kRemoveFile | kMakeChar |
                    kMakeDir | kMakeReg | kMakeSock | kMakeFifo | kMakeBlock | kMakeSym;
  if (abi >= 2) r |= kRefer;
  if (abi >= 3) r |= kTruncate;
  if (abi >= 5) r |= kIoctlDev;
  return r;
}

std::uint64_t read_rights() { return kReadFile | kReadDir | kExecute; }
std::uint64_t dev_rights(int abi) { return kReadFile | kWriteFile | (abi >= 5 ? kIoctlDev : 0); }

// Adds one rule; `fd` may be any fd on the object. Files get only file rights.
int add_rule_fd(int ruleset, int fd, std::uint64_t rights, std::uint64_t handled, bool is_dir) noexcept {
  PathBeneathAttr attr{};
  attr.allowed_access = rights & handled & (is_dir ? ~0ULL : kFileRights);
  attr.parent_fd = fd;
  if (attr.allowed_access == 0) return 0;
  if (::syscall(SYS_landlock_add_rule, ruleset, kRulePathBeneath, &attr, 0) < 0) return errno;
  return 0;
}

int add_rule_path(int ruleset, const char* path, std::uint64_t rights, std::uint64_t handled) noexcept {
  int fd = ::open(path, O_PATH | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? 0 : errno;  // absent in this view: nothing to allow
  struct stat st {};
  int err = ::fstat(fd, &st) < 0 ? errno : add_rule_fd(ruleset, fd, rights, handled, S_ISDIR(st.st_mode));
  ::close(fd);
  return err;
}

Result<void> add(const LandlockRuleset& rs, const std::string& path, std::uint64_t rights) {
  if (int err = add_rule_path(rs.fd.get(), path.c_str(), rights, rs.handled_fs); err != 0)
    return Error::sys("landlock_add_rule " + path, err);
  return {};
}

// A policy path (canonical: resolve() made it so), opened without following any symlink: a
// writable root swapped for a link since then fails the spawn instead of granting the target.
Result<UniqueFd> open_policy_path(const std::string& path) {
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  UniqueFd fd(static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof how)));
  if (!fd) return Error{Errc::kPolicy, errno, "SymlinkedRoot: cannot open " + path + " without following a symlink"};
  return fd;
}

Result<void> add_fd(const LandlockRuleset& rs, int fd, const std::string& path, std::uint64_t rights) {
  struct stat st {};
  if (::fstat(fd, &st) < 0) return Error::sys("fstat " + path);
  if (int err = add_rule_fd(rs.fd.get(), fd, rights, rs.handled_fs, S_ISDIR(st.st_mode)); err != 0)
    return Error::sys("landlock_add_rule " + path, err);
  return {};
}

// The Landlock-only layout of one directory of a writable root that holds carve-outs: every
// right on each entry that holds none, read on the directory itself (so nothing is created,
// removed or renamed in it: the way to each carve-out stays put), and the same one level down
// for each entry on the way to a carve-out; the carve-outs themselves get nothing.
// Entries are opened relative to the directory with O_NOFOLLOW and each rule is bound to the
// inode opened, so a symlink never carries a grant to its target (a later swap neither). No
// rule goes on a symlink, a device node, or a file with other hard links (a file's rule holds
// for the inode by every path: a link to /etc/shadow would grant it).
struct Splitter {
  const LandlockRuleset& rs;
  const ResolvedPolicy& policy;
  std::uint64_t all;
  std::size_t grants = 0;

  bool carved(const std::string& path) const {
    for (const auto* v : {&policy.read_only, &policy.stubs})
      for (const auto& c : *v)
        if (c == path) return true;
    return false;
  }
  bool holds_carve_out(const std::string& path) const {
    for (const auto* v : {&policy.read_only, &policy.stubs})
      for (const auto& c : *v)
        if (c != path && path_within(c, path)) return true;
    return false;
  }

  Result<void> split(UniqueFd dir, const std::string& path) {
    if (auto r = add_fd(rs, dir.get(), path, read_rights()); !r) return r;
    int list_fd = ::openat(dir.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR* d = list_fd < 0 ? nullptr : ::fdopendir(list_fd);
    if (!d) {
      if (list_fd >= 0) ::close(list_fd);
      return Error::sys("opendir " + path);
    }
    Result<void> res;
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      std::string child = (path == "/" ? "" : path) + "/" + name;
      if (carved(child)) continue;
      if (++grants > kMaxSiblings) {
        res = Error{Errc::kPolicy, 0, "PolicyNotExpressible: more than 4096 entries beside the protected paths of " +
                                      path + " and its subdirectories (the Landlock-only backend grants them one by one)"};
        break;
      }
      bool on_the_way = holds_carve_out(child);
      UniqueFd fd(::openat(dir.get(), name.c_str(),
                           (on_the_way ? O_RDONLY | O_DIRECTORY : O_PATH) | O_NOFOLLOW | O_CLOEXEC));
      if (!fd) {
        if (errno == ENOENT) continue;  // gone meanwhile: nothing to grant
        res = on_the_way ? Error{Errc::kPolicy, errno, "SymlinkedCarveOut: " + child + " (on the way to a protected "
                                                       "path) is not a directory that can be opened without following a symlink"}
                         : Error::sys("open " + child);
        break;
      }
      if (on_the_way) {
        if (res = split(std::move(fd), child); !res) break;
        continue;
      }
      struct stat st {};
      if (::fstat(fd.get(), &st) < 0) {
        res = Error::sys("fstat " + child);
        break;
      }
      if (S_ISLNK(st.st_mode) || S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) continue;
      if (!S_ISDIR(st.st_mode) && st.st_nlink > 1) continue;
      if (res = add_fd(rs, fd.get(), child, all); !res) break;
    }
    ::closedir(d);
    return res;
  }
};


}  // namespace

int landlock_abi() noexcept {
  static int abi = [] {
    long v = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, kCreateRulesetVersion);
    return v < 0 ? 0 : static_cast<int>(v);
  }();
  return abi;
}

std::vector<std::string> landlock_unreadable(const ResolvedPolicy& policy) {
  std::vector<std::string> hidden;
  if (policy.full_write) return hidden;
  for (const auto& c : policy.control_plane) {
    bool in_root = false;
    for (const auto& w : policy.writable) in_root = in_root || path_within(c, w);
    if (!in_root) hidden.push_back(c);
  }
  return hidden;
}

Result<LandlockRuleset> landlock_ruleset(const ResolvedPolicy& policy, bool view) {
  int abi = landlock_abi();
  if (abi < 2) return Error{Errc::kPolicy, 0, "BackendUnavailable: Landlock ABI 2 or newer is needed (kernel has " +
                                                  std::to_string(abi) + ")"};
  RulesetAttr attr{};
  attr.handled_access_fs = all_fs(abi);
  std::size_t size = sizeof(std::uint64_t);
  if (abi >= 4) {
    attr.handled_access_net = policy.network ? 0 : (kNetBindTcp | kNetConnectTcp);
    size = 2 * sizeof(std::uint64_t);
  }
  if (abi >= 6) {
    attr.scoped = kScopeAbstractUnix | kScopeSignal;
    size = sizeof attr;
  }
  LandlockRuleset rs;
  rs.fd.reset(static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, size, 0)));
  if (!rs.fd) return Error::sys("landlock_create_ruleset");
  ::fcntl(rs.fd.get(), F_SETFD, FD_CLOEXEC);
  rs.handled_fs = attr.handled_access_fs;
  rs.abi = abi;
  rs.private_tmp = policy.private_tmp;
  const std::uint64_t all = all_fs(abi);

#define TRY(expr)                                 \
  if (auto r_ = (expr); !r_) return std::move(r_).error()
  if (view) {
    TRY(add(rs, "/", policy.full_write ? all : read_rights()));
  } else {
    // No mount masks here: the daemons' control plane (tokens, socket dirs, the registry) is
    // kept out of the read grant instead. One beneath a writable root cannot be: a token
    // there is refused when the network is on (it would open the daemon's WebSocket); with
    // it off no TCP connect is possible at all (ABI 4's rule, or seccomp below it), and it
    // stays readable, like the registry and socket directories there.
    for (const auto& c : policy.control_plane) {
      std::string in_root;
      for (const auto& w : policy.writable)
        if (path_within(c, w)) in_root = w;
      if (policy.full_write) in_root = "/";
      struct stat st {};
      if (!in_root.empty() && policy.network && ::stat(c.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
        // A token (the registry holds no secret, and no Unix socket is reachable here).
        return Error{Errc::kPolicy, 0, "PolicyNotExpressible: " + c + " (a uexec daemon's control plane) lies beneath "
                                       "the writable root " + in_root + ", which the Landlock-only backend cannot hide "
                                       "it in with the network on; give the daemon --socket and --token-file elsewhere, "
                                       "or use the namespaces or bwrap backend"};
      }
    }
    // Read beneath "/" but the control plane: walked once and kept (landlock_read_grant.h).
    auto rule = [&rs](int fd, bool is_dir, const std::string& path, std::uint64_t rights) -> Result<void> {
      if (int err = add_rule_fd(rs.fd.get(), fd, rights, rs.handled_fs, is_dir); err != 0)
        return Error::sys("landlock_add_rule " + path, err);
      return {};
    };
    TRY(for_each_read_grant("/", policy.full_write ? all : read_rights(), kReadDir, landlock_unreadable(policy),
                            kMaxSiblings, rule));
  }
  for (const char* dev : {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"})
    TRY(add(rs, dev, dev_rights(abi)));
  if (!view) {
    // The host's own: /dev/ptmx (the command's own tty gets its rule in the child; other
    // terminals under /dev/pts stay out of reach), /proc read-only (its sysctls are global),
    // and a shared /dev/shm (the view makes a private one; here Python's semaphores need it).
    TRY(add(rs, "/dev/ptmx", dev_rights(abi)));
    TRY(add(rs, "/proc", kReadFile | kReadDir));
    TRY(add(rs, "/dev/shm", all));
  }
  Splitter splitter{rs, policy, all};
  for (const auto& w : policy.writable) {
    auto fd = open_policy_path(w);
    if (!fd) return std::move(fd).error();
    // With a view, carve-outs are read-only mounts and the whole root is granted; Landlock
    // alone has no deny rule, so a root holding carve-outs is split around them.
    if (view || !splitter.holds_carve_out(w)) {
      TRY(add_fd(rs, fd->get(), w, all));
      continue;
    }
    UniqueFd dir(::openat(fd->get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir) return Error::sys("open " + w);
    TRY(splitter.split(std::move(dir), w));
  }
#undef TRY
  return rs;
}

int landlock_add_view_rules(const void* arg, int tty) noexcept {
  const auto* l = static_cast<const LandlockRuleset*>(arg);
  int rs = l->fd.get();
  const std::uint64_t all = all_fs(l->abi);
  if (int e = add_rule_path(rs, "/proc", kReadFile | kReadDir | kWriteFile, l->handled_fs)) return e;
  if (int e = add_rule_path(rs, "/dev/pts", dev_rights(l->abi), l->handled_fs)) return e;
  if (int e = add_rule_path(rs, "/dev/ptmx", dev_rights(l->abi), l->handled_fs)) return e;
  if (int e = add_rule_path(rs, "/dev/shm", all, l->handled_fs)) return e;
  if (l->private_tmp)
    if (int e = add_rule_path(rs, "/tmp", all, l->handled_fs)) return e;
  if (tty >= 0)
    if (int e = add_rule_fd(rs, tty, dev_rights(l->abi), l->handled_fs, false)) return e;
  return 0;
}

int landlock_restrict(const void* arg, int tty) noexcept {
  const auto* l = static_cast<const LandlockRuleset*>(arg);
  if (tty >= 0)
    if (int e = add_rule_fd(l->fd.get(), tty, dev_rights(l->abi), l->handled_fs, false)) return e;
  if (::syscall(SYS_landlock_restrict_self, l->fd.get(), 0) < 0) return errno;
  return 0;
}

}  // namespace uexec::policy
