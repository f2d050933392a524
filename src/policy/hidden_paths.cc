#include "policy/hidden_paths.h"

#include <dirent.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>

#include "base/unique_fd.h"
#include "policy/control_registry.h"
#include "policy/env_lookup.h"
#include "policy/paths.h"

namespace uexec::policy {

using base::Error;
using base::Result;

namespace {

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
    std::string path = real_path(raw);
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

// Every live daemon's control plane (control_registry.h): the directories (the registry, and
// each socket's own 0700 directory unless it holds the workspace) and the files (tokens, and
// sockets whose directory cannot be hidden whole). Canonical, existing paths only.
Result<void> control_plane_paths(const ResolveInput& in, const ResolvedPolicy& r, std::vector<std::string>& dirs,
                                 std::vector<std::string>& files) {
  std::string registry = in.registry_dir.empty() ? control_registry_dir() : in.registry_dir;
  struct stat st {};
  if (::stat(registry.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) dirs.push_back(real_path(registry));
  const std::string cwd = real_path(in.cwd);
  auto holds_workspace = [&](const std::string& d) {
    for (const auto& w : r.writable)
      if (path_within(w, d)) return true;
    return path_within(cwd, d);
  };
  // The journals (what daemons kept of their sessions' output) are hidden whether or not a
  // daemon runs: the default place beside the registry and the one this environment names.
  // A daemon journaling elsewhere registers its directory below.
  for (const std::string& j : {journal_root_beside(registry), default_journal_root()})
    if (::stat(j.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && !holds_workspace(real_path(j)))
      dirs.push_back(real_path(j));
  bool overflow = false;
  auto planes = live_control_planes(in.registry_dir, &overflow);
  if (overflow)
    return Error::policy("ControlRegistryFull: " + registry + " holds more than " + std::to_string(kMaxControlPlanes) +
                        " entries; refusing to hide only some daemons");
  for (const auto& plane : planes) {
    if (!plane.socket.empty() && ::stat(plane.socket.c_str(), &st) == 0) {
      std::string sock = real_path(plane.socket);
      std::string dir = sock.substr(0, sock.rfind('/'));
      struct stat ds {};
      // A daemon's socket directory is its own and 0700 (unix_server.cc); a shared one (/tmp)
      // or one that holds the workspace keeps its other entries: then only the socket goes.
      bool own_dir = !dir.empty() && ::stat(dir.c_str(), &ds) == 0 && ds.st_uid == ::geteuid() &&
                     (ds.st_mode & 0077) == 0;
      if (own_dir && !holds_workspace(dir)) {
        dirs.push_back(dir);
      } else {
        files.push_back(sock);
        if (std::string lock = socket_lock_path(sock); ::stat(lock.c_str(), &st) == 0) files.push_back(lock);
      }
    }
    for (const auto& t : plane.token_files)
      if (::stat(t.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) files.push_back(real_path(t));
    // A private directory (a daemon's journal) is hidden whole, unless the sandbox's own
    // workspace lies inside it (someone runs a sandbox there on purpose).
    for (const auto& d : plane.private_dirs)
      if (::stat(d.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && !holds_workspace(real_path(d)))
        dirs.push_back(real_path(d));
  }
  return {};
}

}  // namespace

Result<void> add_hidden_paths(const PermissionProfile& p, const ResolveInput& in, const std::string& home,
                             ResolvedPolicy& r) {
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
      std::string c = real_path(d);
      bool allowed = false;
      for (const auto& a : p.allow_unix_sockets) allowed = allowed || path_within(a, c);
      if (!allowed || c == real_path(control) || c == real_path(state)) r.hide_dirs.push_back(c);
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
      std::string c = real_path(f);
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

  return {};
}

// ssh_agent_dirs: listing a /tmp of a few hundred entries cost 0.25 ms of every sandboxed spawn (ext4's
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

}  // namespace uexec::policy
