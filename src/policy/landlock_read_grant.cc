#include "policy/landlock_read_grant.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <ctime>
#include <memory>
#include <mutex>

#include "base/unique_fd.h"
#include "policy/paths.h"

namespace uexec::policy {

using base::Errc;
using base::Error;
using base::Result;
using base::UniqueFd;

namespace {

// Who a directory walked was: a change of any of these means its listing may have changed.
struct DirIdentity {
  std::string path;
  dev_t dev = 0;
  ino_t ino = 0;
  timespec ctime{};
};

// One rule of the walk. `fd` invalid: the entry lies on another mount than its directory and
// is reopened by `path` on every use (a kept fd would pin that mount).
struct Grant {
  std::string path;
  std::uint64_t rights = 0;
  bool is_dir = false;
  UniqueFd fd;
};

struct Walk {
  std::string root;
  std::uint64_t rights = 0, list_right = 0;
  std::vector<std::string> hidden;
  std::vector<DirIdentity> dirs;
  std::vector<Grant> grants;
  std::size_t kept_fds = 0;

  bool same_question(const std::string& r, std::uint64_t rt, std::uint64_t lr,
                     const std::vector<std::string>& h) const {
    return root == r && rights == rt && list_right == lr && hidden == h;
  }
};

std::mutex g_mutex;
std::unique_ptr<Walk> g_kept;  // the last walk, while it may be reused (under g_mutex)
std::atomic<std::size_t> g_walks{0};

bool same_time(const timespec& a, const timespec& b) { return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec; }

// The directories walked are still what they were (device, inode, ctime), looked up as then.
bool unchanged(const Walk& w) {
  for (const auto& d : w.dirs) {
    struct stat st {};
    if (::lstat(d.path.c_str(), &st) != 0 || st.st_dev != d.dev || st.st_ino != d.ino ||
        !same_time(st.st_ctim, d.ctime))
      return false;
  }
  return true;
}

struct Walker {
  Walk& w;
  std::size_t budget;

  bool hidden_itself(const std::string& path) const {
    for (const auto& h : w.hidden)
      if (path_within(path, h)) return true;
    return false;
  }
  bool holds_hidden(const std::string& path) const {
    for (const auto& h : w.hidden)
      if (path_within(h, path)) return true;
    return false;
  }

  // `fd`: an O_PATH fd on the directory `path`, which holds a hidden path.
  Result<void> visit_dir(UniqueFd fd, const std::string& path) {
    struct statx sx {};
    if (::statx(fd.get(), "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS | STATX_MNT_ID, &sx) != 0)
      return Error::sys("statx " + path);
    w.dirs.push_back({path, static_cast<dev_t>(makedev(sx.stx_dev_major, sx.stx_dev_minor)),
                      static_cast<ino_t>(sx.stx_ino), timespec{sx.stx_ctime.tv_sec, static_cast<long>(sx.stx_ctime.tv_nsec)}});
    const bool mnt_known = (sx.stx_mask & STATX_MNT_ID) != 0;
    const std::uint64_t mnt = sx.stx_mnt_id;
    UniqueFd list(::openat(fd.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    w.grants.push_back({path, w.rights & w.list_right, true, std::move(fd)});
    ++w.kept_fds;
    DIR* d = list ? ::fdopendir(list.get()) : nullptr;
    if (!d) return Error::sys("opendir " + path);
    int dir_fd = list.release();  // closedir closes it
    Result<void> res;
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      std::string child = (path == "/" ? "" : path) + "/" + name;
      if (res = visit_entry(dir_fd, name, child, mnt_known, mnt); !res) break;
    }
    ::closedir(d);
    return res;
  }

  Result<void> visit_entry(int dir_fd, const std::string& name, const std::string& child, bool mnt_known,
                           std::uint64_t dir_mnt) {
    UniqueFd fd(::openat(dir_fd, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    // Gone meanwhile, or out of this user's reach: no rule (unreadable in the sandbox too).
    if (!fd) return errno == ENOENT || errno == EACCES || errno == EPERM ? Result<void>{} : Error::sys("open " + child);
    struct statx sx {};
    if (::statx(fd.get(), "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_TYPE | STATX_MNT_ID, &sx) != 0)
      return Error::sys("statx " + child);
    if (S_ISLNK(sx.stx_mode)) return {};  // a rule would follow it; its target is granted where it lies
    if (budget == 0)
      return Error{Errc::kPolicy, 0, "PolicyNotExpressible: hiding uexec's control plane from the Landlock-only "
                                     "backend needs more than 4096 rules (below " + child + ")"};
    --budget;
    if (hidden_itself(child)) return {};
    const bool is_dir = S_ISDIR(sx.stx_mode);
    if (holds_hidden(child)) return is_dir ? visit_dir(std::move(fd), child) : Result<void>{};
    // An entry on another mount (a mount point, or no mount id to tell) is reopened per use.
    if (!mnt_known || !(sx.stx_mask & STATX_MNT_ID) || sx.stx_mnt_id != dir_mnt) fd.reset();
    if (fd) ++w.kept_fds;
    w.grants.push_back({child, w.rights, is_dir, std::move(fd)});
    return {};
  }
};

Result<void> grant_all(const Walk& w, const ReadGrantRule& add) {
  for (const auto& g : w.grants) {
    if (g.fd) {
      if (auto r = add(g.fd.get(), g.is_dir, g.path, g.rights); !r) return r;
      continue;
    }
    UniqueFd fd(::open(g.path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) {
      if (errno == ENOENT) continue;
      return Error::sys("open " + g.path);
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return Error::sys("fstat " + g.path);
    if (S_ISLNK(st.st_mode)) continue;
    if (auto r = add(fd.get(), S_ISDIR(st.st_mode), g.path, g.rights); !r) return r;
  }
  return {};
}

// Can this walk be reused? Not when a directory walked had changed shortly before it began
// (a change in the same timestamp tick would go unseen), nor when it would keep too many fds.
bool keepable(const Walk& w, const timespec& began, std::chrono::nanoseconds settle) {
  if (w.kept_fds > kMaxKeptFds) return false;
  const auto began_ns = std::chrono::seconds{began.tv_sec} + std::chrono::nanoseconds{began.tv_nsec};
  for (const auto& d : w.dirs) {
    const auto ctime_ns = std::chrono::seconds{d.ctime.tv_sec} + std::chrono::nanoseconds{d.ctime.tv_nsec};
    if (ctime_ns + settle > began_ns) return false;
  }
  return true;
}

}  // namespace

Result<void> for_each_read_grant(const std::string& root, std::uint64_t rights, std::uint64_t list_right,
                                 const std::vector<std::string>& hidden, std::size_t max_entries,
                                 const ReadGrantRule& add, std::chrono::nanoseconds settle) {
  bool holds = false;
  for (const auto& h : hidden) {
    if (path_within(root, h)) return {};  // the root is hidden itself
    holds = holds || path_within(h, root);
  }
  if (!holds) {  // one rule, nothing to walk
    UniqueFd fd(::open(root.c_str(), O_PATH | O_CLOEXEC));
    if (!fd) return errno == ENOENT ? Result<void>{} : Error::sys("open " + root);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return Error::sys("fstat " + root);
    return add(fd.get(), S_ISDIR(st.st_mode), root, rights);
  }

  std::lock_guard lock(g_mutex);
  if (g_kept && g_kept->same_question(root, rights, list_right, hidden) && unchanged(*g_kept))
    return grant_all(*g_kept, add);
  g_kept.reset();

  timespec began{};
  ::clock_gettime(CLOCK_REALTIME, &began);
  auto walk = std::make_unique<Walk>();
  walk->root = root;
  walk->rights = rights;
  walk->list_right = list_right;
  walk->hidden = hidden;
  ++g_walks;
  UniqueFd fd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return Error::sys("open " + root);
  Walker walker{*walk, max_entries};
  if (auto r = walker.visit_dir(std::move(fd), root); !r) return r;
  if (auto r = grant_all(*walk, add); !r) return r;
  if (keepable(*walk, began, settle)) g_kept = std::move(walk);
  return {};
}

std::size_t read_grant_walks() noexcept { return g_walks.load(); }

}  // namespace uexec::policy
