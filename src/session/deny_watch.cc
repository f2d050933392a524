#include "session/deny_watch.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "base/log.h"
#include "policy/glob.h"
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

// What a directory entry is to a command that names it: a symlink counts as its target.
// `real` becomes the entry's real path (the target's, for a symlink).
struct Seen {
  bool exists = false;
  bool dir = false;
};
Seen look(const std::string& path, std::string& real) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return {};
  if (S_ISLNK(st.st_mode)) {
    char buf[PATH_MAX];
    if (::stat(path.c_str(), &st) != 0 || !::realpath(path.c_str(), buf)) return {};
    real = buf;
  }
  return {true, S_ISDIR(st.st_mode)};
}

bool is_dir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string child(const std::string& dir, std::string_view name) {
  return (dir == "/" ? "" : dir) + "/" + std::string(name);
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

Result<void> DenyReadWatcher::watch(const std::string& dir, const std::string& real, int depth, int limit,
                                    bool scan) {
  if (auto it = wds_.find(real); it != wds_.end()) {
    Dir& d = dirs_[it->second];
    if (d.limit - d.depth >= limit - depth && !scan) return {};  // already watched at least as deep
    if (d.limit - d.depth >= limit - depth && d.path != dir) return {};  // reached again through a link
    d.depth = std::min(d.depth, depth);
    d.limit = std::max(d.limit, limit);
  } else {
    if (dirs_.size() >= kMaxWatches)
      return Error{Errc::kPolicy, 0, "deny_read_index_unavailable: more than " + std::to_string(kMaxWatches) +
                                         " directories to watch for deny-read globs (at " + dir + ")"};
    int wd = ::inotify_add_watch(fd_.get(), real.c_str(), kEvents | IN_ONLYDIR | IN_DONT_FOLLOW);
    if (wd < 0) {
      if (errno == ENOENT || errno == ENOTDIR) return {};  // gone already
      return Error{Errc::kPolicy, errno, "deny_read_index_unavailable: inotify_add_watch " + dir};
    }
    if (auto moved = dirs_.find(wd); moved != dirs_.end()) wds_.erase(moved->second.real);  // the inode moved here
    dirs_[wd] = Dir{dir, real, depth, limit};
    wds_[real] = wd;
  }
  // Entries already there: a directory made just before its watch may hold new matches.
  DIR* d = ::opendir(real.c_str());
  if (!d) return {};
  struct Child {
    std::string path, real;
    Seen seen;
  };
  std::vector<Child> children;
  while (dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    Child c{child(dir, name), child(real, name), {}};
    c.seen = look(c.real, c.real);
    if (c.seen.exists) children.push_back(std::move(c));
  }
  ::closedir(d);
  for (const auto& c : children) {
    if (scan) offer(c.path, c.real, c.seen.dir);
    if (c.seen.dir && depth + 1 < limit && wanted(c.path))
      if (auto r = watch(c.path, c.real, depth + 1, limit, scan); !r) return r;
  }
  return {};
}

Result<void> DenyReadWatcher::add(const std::string& id, const std::vector<std::string>& patterns, int channel) {
  if (patterns.empty()) return {};
  if (auto r = ensure_open(); !r) return r;
  Entry& entry = sessions_[id];
  entry.owner = this;
  entry.id = id;
  entry.patterns = patterns;
  entry.channel = channel;
  if (auto r = open_channel(entry); !r) {
    remove(id);
    return Error{Errc::kPolicy, 0, "deny_read_index_unavailable: " + r.error().message()};
  }
  for (const auto& p : patterns) {
    auto parts = policy::path_components(p);
    std::size_t base = 0;
    while (base < parts.size() && !policy::has_glob_chars(parts[base])) ++base;
    bool deep = std::find(parts.begin(), parts.end(), "**") != parts.end();
    // The static prefix; a literal path's parent. Directories below it that can matter.
    std::size_t prefix = std::min(base, parts.empty() ? 0 : parts.size() - 1);
    int limit = deep ? kUnbounded : static_cast<int>(parts.size() - prefix);
    // The nearest existing ancestor stands in for missing ones (watched deeper to reach).
    while (prefix > 0 && !is_dir(join(parts, prefix))) {
      --prefix;
      if (limit < kUnbounded) ++limit;
    }
    // Scanning as the watches go in also catches what the sandbox made between its exec and
    // now (a mask over a launch-time mask is harmless).
    std::string top = join(parts, prefix);
    char buf[PATH_MAX];
    std::string real = ::realpath(top.c_str(), buf) ? std::string(buf) : top;
    if (auto r = watch(top, real, 0, limit, true); !r) {
      std::erase_if(uncovered_, [&](const auto& u) { return u.first == id; });
      remove(id);
      return r;
    }
  }
  if (Entry& e = sessions_[id]; e.uncovered) {
    std::string why;
    for (const auto& u : uncovered_)
      if (u.first == id) why = u.second;
    std::erase_if(uncovered_, [&](const auto& u) { return u.first == id; });
    remove(id);
    return Error{Errc::kPolicy, 0, "deny_read_index_unavailable: " + why};
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

void DenyReadWatcher::offer(const std::string& path, const std::string& real, bool dir) {
  for (auto& [id, e] : sessions_) {
    for (const auto& pattern : e.patterns) {
      if (!policy::glob_match(pattern, path)) continue;
      std::string msg = (dir ? "d" : "f") + real;
      if (msg.size() > UEXEC_SUP_MAX_MASK_PATH) {
        uncover(e, "deny-read: " + path + " matches but its path is too long to mask");
        break;
      }
      send_mask(e, std::move(msg));
      break;
    }
  }
}

// A datagram socketpair's queue holds only net.unix.max_dgram_qlen requests (10 by default):
// what does not fit waits here, in order, until init has read some.
void DenyReadWatcher::send_mask(Entry& e, std::string msg) {
  if (e.channel < 0) return;  // init is gone
  if (e.pending.empty()) {
    if (::send(e.channel, msg.data(), msg.size(), MSG_DONTWAIT | MSG_NOSIGNAL) >= 0) {
      ++masks_sent_;
      return;
    }
    if (errno != EAGAIN) {
      // Init is gone: the sandbox with it (the session is ending).
      UEXEC_LOG(kDebug, "session {}: deny-read mask not sent: {}", e.id, std::strerror(errno));
      return;
    }
  }
  if (e.pending.size() >= kMaxPendingMasks)
    return uncover(e, "deny-read: more than " + std::to_string(kMaxPendingMasks) + " late masks waiting for the sandbox");
  e.pending.push_back(std::move(msg));
  uv_poll_start(e.poll.get(), UV_READABLE | UV_WRITABLE, &DenyReadWatcher::on_channel);
}

// The channel of a session: init's reports, and room for the masks that were waiting.
Result<void> DenyReadWatcher::open_channel(Entry& e) {
  // uv_poll_init makes the socket non-blocking, and the command's side shares its open file
  // (it sends its seccomp listener on it): its flags are put back (sends here never block).
  int flags = ::fcntl(e.channel, F_GETFL);
  auto poll = loop::make_handle<uv_poll_t>(
      [&](uv_poll_t* p) { return uv_poll_init(loop_->get(), p, e.channel); }, "uv_poll_init mask channel");
  if (flags >= 0) ::fcntl(e.channel, F_SETFL, flags);
  if (!poll) return std::move(poll).error();
  e.poll = std::move(poll).value();
  e.poll.get()->data = &e;
  uv_poll_start(e.poll.get(), UV_READABLE, &DenyReadWatcher::on_channel);
  return {};
}

void DenyReadWatcher::flush(Entry& e) {
  if (e.channel < 0) return;
  while (!e.pending.empty()) {
    const std::string& msg = e.pending.front();
    if (::send(e.channel, msg.data(), msg.size(), MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
      if (errno == EAGAIN) return;  // still full: wait on
      e.pending.clear();  // init is gone
      break;
    }
    ++masks_sent_;
    e.pending.pop_front();
  }
  uv_poll_start(e.poll.get(), UV_READABLE, &DenyReadWatcher::on_channel);
}

// "H" and a path: init masked it, found it still open inside, and stopped the sandbox;
// "F" and a path: init could not mask it.
void DenyReadWatcher::read_reports(Entry& e) {
  char buf[UEXEC_SUP_MAX_MASK_PATH + 2];
  for (;;) {
    ssize_t n = ::recv(e.channel, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
      // Init is gone (the sandbox with it): nothing more to send or hear.
      e.pending.clear();
      e.channel = -1;
      uv_poll_stop(e.poll.get());
      return;
    }
    std::string path(buf + 1, static_cast<std::size_t>(n - 1));
    if (buf[0] == 'H') uncover(e, "deny-read: " + path + " was already open inside the sandbox when its late mask landed");
    if (buf[0] == 'F') uncover(e, "deny-read: the sandbox could not mask " + path);
  }
}

void DenyReadWatcher::uncover(const std::string& dir, const std::string& why) {
  for (auto& [id, e] : sessions_)
    for (const auto& pattern : e.patterns)
      if (policy::glob_may_match_below(pattern, dir) || policy::glob_match(pattern, dir)) {
        uncover(e, why);
        break;
      }
}

void DenyReadWatcher::uncover(Entry& e, const std::string& why) {
  if (e.uncovered) return;
  e.uncovered = true;
  UEXEC_LOG(kWarn, "session {}: {}", e.id, why);
  uncovered_.emplace_back(e.id, why);
}

void DenyReadWatcher::report_uncovered() {
  auto list = std::move(uncovered_);
  uncovered_.clear();
  for (const auto& [id, why] : list)
    if (on_uncovered) on_uncovered(id, why);
}

void DenyReadWatcher::drain() {
  alignas(inotify_event) char buf[16 * 1024];
  for (;;) {
    ssize_t n = ::read(fd_.get(), buf, sizeof buf);
    if (n <= 0) break;
    for (char* p = buf; p < buf + n;) {
      auto* ev = reinterpret_cast<inotify_event*>(p);
      p += sizeof(inotify_event) + ev->len;
      if (ev->mask & IN_Q_OVERFLOW) {
        // Events were lost: look at every watched directory again.
        std::vector<Dir> all;
        for (const auto& [wd, d] : dirs_) all.push_back(d);
        for (const auto& d : all)
          if (auto r = watch(d.path, d.real, d.depth, d.limit, true); !r) uncover(d.path, "deny-read: " + r.error().message());
        continue;
      }
      auto it = dirs_.find(ev->wd);
      if (it == dirs_.end()) continue;
      if (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) {
        // Gone or moved: its path no longer names it. Where it went is watched through its
        // new parent's IN_MOVED_TO (if that is watched), under its new path.
        if (!(ev->mask & IN_IGNORED)) ::inotify_rm_watch(fd_.get(), ev->wd);
        wds_.erase(it->second.real);
        dirs_.erase(it);
        continue;
      }
      if (ev->len == 0) continue;
      Dir d = it->second;
      std::string path = child(d.path, ev->name), real = child(d.real, ev->name);
      Seen seen = look(real, real);
      if (!seen.exists) continue;  // gone again: nothing to mask
      offer(path, real, seen.dir);
      if (seen.dir && d.depth + 1 < d.limit && wanted(path))
        if (auto r = watch(path, real, d.depth + 1, d.limit, true); !r) uncover(path, "deny-read: " + r.error().message());
    }
  }
  report_uncovered();
}

void DenyReadWatcher::on_readable(uv_poll_t* h, int, int) noexcept {
  if (auto* self = static_cast<DenyReadWatcher*>(h->data)) self->drain();
}

void DenyReadWatcher::on_channel(uv_poll_t* h, int status, int events) noexcept {
  auto* e = static_cast<Entry*>(h->data);
  if (!e) return;
  DenyReadWatcher* self = e->owner;
  if (status < 0) {
    uv_poll_stop(h);  // the channel is gone with init
    return;
  }
  if (events & UV_READABLE) self->read_reports(*e);
  if ((events & UV_WRITABLE) && e->channel >= 0) self->flush(*e);
  self->report_uncovered();
}

}  // namespace uexec::session
