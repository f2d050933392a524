#include "policy/control_registry.h"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>

namespace uexec::policy {

using base::Error;
using base::Result;

namespace {

// The whole of a small file (at most `max` bytes; more, or an error: empty), by plain read(2):
// every resolve() reads each entry and its /proc stat, and iostreams cost several times more.
std::string slurp(const char* path, std::size_t max) {
  std::string out;
  int fd = ::open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > max) {
      out.clear();
      break;
    }
  }
  ::close(fd);
  return out;
}

}  // namespace

// Field 22 of /proc/<pid>/stat (after the parenthesised comm, which may hold spaces).
unsigned long long process_start_time(pid_t pid) {
  std::string s = slurp(("/proc/" + std::to_string(pid) + "/stat").c_str(), 4096);
  std::size_t at = s.rfind(')');
  if (at == std::string::npos) return 0;
  for (int field = 2; field < 22; ++field) {  // ')' ends field 2; field 22 follows the 21st space
    at = s.find(' ', at + 1);
    if (at == std::string::npos) return 0;
  }
  return std::strtoull(s.c_str() + at + 1, nullptr, 10);
}

Result<void> private_dir(const std::string& dir) {
  for (std::size_t i = 1; i <= dir.size(); ++i) {
    if (i < dir.size() && dir[i] != '/') continue;
    std::string prefix = dir.substr(0, i);
    if (::mkdir(prefix.c_str(), 0700) < 0 && errno != EEXIST) return Error::sys("mkdir " + prefix);
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return Error::sys("lstat " + dir);
  if (!S_ISDIR(st.st_mode)) return Error::invalid(dir + " is not a directory (a symlink?); refusing to use it");
  if (st.st_uid != ::getuid()) return Error::invalid(dir + " is owned by another user; refusing to use it");
  if ((st.st_mode & 0077) != 0 && ::chmod(dir.c_str(), 0700) != 0) return Error::sys("chmod 0700 " + dir);
  return {};
}

namespace {

// `path` canonical when it exists, else made absolute against the cwd.
std::string canonical(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf)) return buf;
  if (!path.empty() && path[0] == '/') return path;
  return ::getcwd(buf, sizeof buf) ? std::string(buf) + "/" + path : path;
}

bool parse_entry(const std::string& path, ControlPlane& out) {
  std::string text = slurp(path.c_str(), 65536);
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return false;
  try {
    out.pid = j.at("pid").get<pid_t>();
    out.start_time = j.at("start_time").get<unsigned long long>();
    out.socket = j.value("socket", "");
    out.token_files = j.value("token_files", std::vector<std::string>{});
    out.tcp_ports = j.value("tcp_ports", std::vector<int>{});
    out.private_dirs = j.value("private_dirs", std::vector<std::string>{});
  } catch (const nlohmann::json::exception&) {
    return false;
  }
  return out.pid > 0;
}

}  // namespace

std::string control_registry_dir() {
  // Read once per uid: the passwd lookup (NSS) cost more than the whole registry scan.
  static std::mutex mu;
  static uid_t cached_uid = static_cast<uid_t>(-1);
  static std::string cached;
  std::lock_guard<std::mutex> lock(mu);
  if (cached_uid == ::getuid()) return cached;
  std::string home;
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  if (::getpwuid_r(::getuid(), &pw, buf.data(), buf.size(), &found) == 0 && found && found->pw_dir)
    home = found->pw_dir;
  // Without a passwd home (a bare container uid), a per-uid directory beside the default socket's.
  cached = home.empty() || home == "/" ? "/tmp/uexec-" + std::to_string(::getuid()) + "-daemons"
                                       : home + "/.local/state/uexec/daemons";
  cached_uid = ::getuid();
  return cached;
}

std::string journal_root_beside(const std::string& registry_dir) {
  constexpr std::string_view kDaemons = "daemons";
  if (registry_dir.size() > kDaemons.size() &&
      registry_dir.compare(registry_dir.size() - kDaemons.size(), kDaemons.size(), kDaemons) == 0)
    return registry_dir.substr(0, registry_dir.size() - kDaemons.size()) + "journal";
  return registry_dir + "-journal";
}

std::string default_journal_root() {
  const char* state = std::getenv("XDG_STATE_HOME");
  if (state && state[0] == '/') return std::string(state) + "/uexec/journal";
  return journal_root_beside(control_registry_dir());
}

ControlRegistration& ControlRegistration::operator=(ControlRegistration&& o) noexcept {
  if (this != &o) {
    if (!path_.empty()) ::unlink(path_.c_str());
    path_ = std::move(o.path_);
    o.path_.clear();
  }
  return *this;
}

ControlRegistration::~ControlRegistration() {
  if (!path_.empty()) ::unlink(path_.c_str());
}

Result<ControlRegistration> ControlRegistration::add(ControlPlane plane, std::string dir) {
  if (dir.empty()) dir = control_registry_dir();
  if (auto r = private_dir(dir); !r) return std::move(r).error();
  plane.pid = ::getpid();
  if (!plane.socket.empty()) plane.socket = canonical(plane.socket);
  for (auto& t : plane.token_files) t = canonical(t);
  for (auto& d : plane.private_dirs) d = canonical(d);
  plane.start_time = process_start_time(plane.pid);
  nlohmann::json j = {{"pid", plane.pid},
                      {"start_time", plane.start_time},
                      {"socket", plane.socket},
                      {"token_files", plane.token_files},
                      {"tcp_ports", plane.tcp_ports},
                      {"private_dirs", plane.private_dirs}};
  std::string text = j.dump() + "\n";
  std::string path = dir + "/" + std::to_string(plane.pid) + ".json";
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Error::sys("create " + tmp);
  bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  int err = errno;
  ::close(fd);
  if (!written || ::rename(tmp.c_str(), path.c_str()) != 0) {
    if (written) err = errno;
    ::unlink(tmp.c_str());
    return Error::sys("write " + path, err);
  }
  ControlRegistration reg;
  reg.path_ = std::move(path);
  return reg;
}

std::vector<ControlPlane> live_control_planes(const std::string& dir_in, bool* overflow) {
  if (overflow) *overflow = false;
  std::string dir = dir_in.empty() ? control_registry_dir() : dir_in;
  std::vector<ControlPlane> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  std::size_t seen = 0;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.size() < 6 || name.compare(name.size() - 5, 5, ".json") != 0) continue;
    std::string path = dir + "/" + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > 65536) continue;
    if (++seen > kMaxControlPlanes) {
      if (overflow) *overflow = true;
      break;
    }
    ControlPlane plane;
    if (!parse_entry(path, plane)) continue;
    // Alive and the same process (a reused pid has another start time), else stale. A pid
    // that exists but whose start time cannot be read (hidepid) counts as alive: hiding a
    // dead daemon's paths costs nothing, unhiding a live one's would. Only a gone pid's entry
    // is removed: one whose pid was reused may be replaced by a new daemon of that pid at
    // any moment, and removing that one would unhide it.
    unsigned long long now = process_start_time(plane.pid);
    if (now != plane.start_time) {
      bool gone = ::kill(plane.pid, 0) != 0 && errno == ESRCH;
      if (gone) ::unlink(path.c_str());
      if (gone || now != 0) continue;
    }
    out.push_back(std::move(plane));
  }
  ::closedir(d);
  return out;
}

}  // namespace uexec::policy
