#include "session/deny_watch.h"

#include <dirent.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "base/log.h"
#include "policy/profile.h"
#include "pty/supervisor_protocol.h"

namespace uexec::session {

using base::Errc;
using base::Error;
using base::Result;

namespace {

constexpr std::uint32_t kEvents = IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF;

std::string join(const std::vector<std::string_view>& parts, std::size_t n) {
  std::string s;
  for (std::size_t i = 0; i < n; ++i) (s += '/') += parts[i];
  return s.empty() ? "/" : s;
}

bool is_dir(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

Result<void> DenyReadWatcher::ensure_open() {
  if (fd_) return {};
  fd_.reset(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!fd_) return Error{Errc::kPolicy, errno, "deny_read_index_unavailable: inotify_init1"};
  auto poll = loop::make_handle<uv_poll_t>(
      [&](uv_poll_t* p) { return uv_poll_init(loop_->get(), p, fd_.get()); }, "uv_poll_init inotify");
  if (!poll) {
    fd_.reset();
    return std::move(poll).error();
  }
  poll_ = std::move(poll).value();
  poll_.get()->data = this;
  uv_poll_start(poll_.get(), UV_READABLE, &DenyReadWatcher::on_readable);
  return {};
}

Result<void> DenyReadWatcher::watch(const std::string& dir, int depth, int limit, bool scan) {
  if (auto it = wds_.find(dir); it != wds_.end()) {
    Dir& d = dirs_[it->second];
    if (d.limit - d.depth >= limit - depth && !scan) return {};  // already watched at least as deep
    d.depth = std::min(d.depth, depth);
    d.limit = std::max(d.limit, limit);
  } else {
    if (dirs_.size() >= kMaxWatches)
      return Error{Errc::kPolicy, 0, "deny_read_index_unavailable: more than " + std::to_string(kMaxWatches) +
                                         " directories to watch for deny-read globs"};
    int wd = ::inotify_add_watch(fd_.get(), dir.c_str(), kEvents | IN_ONLYDIR | IN_DONT_FOLLOW);
    if (wd < 0) {
      if (errno == ENOENT || errno == ENOTDIR) return {};  // gone already
      return Error{Errc::kPolicy, errno, "deny_read_index_unavailable: inotify_add_watch " + dir};
    }
    dirs_[wd] = Dir{dir, depth, limit};
    wds_[dir] = wd;
  }
  // Entries already there: a directory made just before its watch may hold new matches.
  DIR* d = ::opendir(dir.c_str());
  if (!d) return {};
  std::vector<std::pair<std::string, bool>> children;
  while (dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    std::string path = dir == "/" ? "/" + std::string(name) : dir + "/" + std::string(name);
    children.emplace_back(path, is_dir(path));
  }
  ::closedir(d);
  for (const auto& [path, dir_child] : children) {
    if (scan) offer(path, dir_child);
    if (dir_child && depth + 1 < limit && wanted(path))
      if (auto r = watch(path, depth + 1, limit, scan); !r) return r;
  }
  return {};
}

Result<void> DenyReadWatcher::add(const std::string& id, const std::vector<std::string>& patterns, int channel,
                                  int max_depth) {
  if (patterns.empty()) return {};
  if (auto r = ensure_open(); !r) return r;
  sessions_[id] = Entry{patterns, channel};
  for (const auto& p : patterns) {
    auto parts = policy::path_components(p);
    std::size_t base = 0;
    while (base < parts.size() && !policy::has_glob_chars(parts[base])) ++base;
    bool deep = std::find(parts.begin(), parts.end(), "**") != parts.end();
    // The static prefix; a literal path's parent. Directories below it that can matter.
    std::size_t prefix = std::min(base, parts.empty() ? 0 : parts.size() - 1);
    int limit = deep ? max_depth : static_cast<int>(parts.size() - prefix);
    // The nearest existing ancestor stands in for missing ones (watched deeper to reach).
    while (prefix > 0 && !is_dir(join(parts, prefix))) {
      --prefix;
      ++limit;
    }
    // Scanning as the watches go in also catches what the sandbox made between its exec and
    // now (a mask over a launch-time mask is harmless).
    if (auto r = watch(join(parts, prefix), 0, limit, true); !r) {
      remove(id);
      return r;
    }
  }
  return {};
}

void DenyReadWatcher::remove(const std::string& id) {
  sessions_.erase(id);
  if (!sessions_.empty()) return;
  // Nobody left: drop every watch with the instance.
  poll_.close();
  fd_.reset();
  dirs_.clear();
  wds_.clear();
}

bool DenyReadWatcher::wanted(const std::string& dir) const {
  for (const auto& [id, e] : sessions_)
    for (const auto& pattern : e.patterns)
      if (policy::glob_may_match_below(pattern, dir)) return true;
  return false;
}

void DenyReadWatcher::offer(const std::string& path, bool dir) {
  for (auto& [id, e] : sessions_) {
    for (const auto& pattern : e.patterns) {
      if (!policy::glob_match(pattern, path)) continue;
      std::string msg = (dir ? "d" : "f") + path;
      if (msg.size() > UEXEC_SUP_MAX_MASK_PATH) break;
      if (::send(e.channel, msg.data(), msg.size(), MSG_DONTWAIT | MSG_NOSIGNAL) >= 0) {
        ++masks_sent_;
      } else {
        UEXEC_LOG(kWarn, "session {}: cannot send a deny-read mask for {}: {}", id, path, std::strerror(errno));
      }
      break;
    }
  }
}

void DenyReadWatcher::drain() {
  alignas(inotify_event) char buf[16 * 1024];
  for (;;) {
    ssize_t n = ::read(fd_.get(), buf, sizeof buf);
    if (n <= 0) return;
    for (char* p = buf; p < buf + n;) {
      auto* ev = reinterpret_cast<inotify_event*>(p);
      p += sizeof(inotify_event) + ev->len;
      if (ev->mask & IN_Q_OVERFLOW) {
        // Events were lost: look at every watched directory again.
        std::vector<Dir> all;
        for (const auto& [wd, d] : dirs_) all.push_back(d);
        for (const auto& d : all) (void)watch(d.path, d.depth, d.limit, true);
        continue;
      }
      auto it = dirs_.find(ev->wd);
      if (it == dirs_.end()) continue;
      if (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) {
        // Gone or moved: its path no longer names it. Where it went is watched through its
        // new parent's IN_MOVED_TO (if that is watched), under its new path.
        if (!(ev->mask & IN_IGNORED)) ::inotify_rm_watch(fd_.get(), ev->wd);
        wds_.erase(it->second.path);
        dirs_.erase(it);
        continue;
      }
      if (ev->len == 0) continue;
      Dir d = it->second;
      std::string path = (d.path == "/" ? "" : d.path) + "/" + ev->name;
      bool dir = (ev->mask & IN_ISDIR) != 0;
      offer(path, dir);
      if (dir && d.depth + 1 < d.limit && wanted(path)) (void)watch(path, d.depth + 1, d.limit, true);
    }
  }
}

void DenyReadWatcher::on_readable(uv_poll_t* h, int, int) noexcept {
  if (auto* self = static_cast<DenyReadWatcher*>(h->data)) self->drain();
}

}  // namespace uexec::session
