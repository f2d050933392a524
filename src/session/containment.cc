#include "session/containment.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <unordered_set>

#include <fmt/format.h>

#include "base/log.h"

namespace uexec::session {

namespace {

std::string read_small(const std::string& path, std::size_t max = 64 * 1024) {
  base::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return {};
  std::string out;
  char buf[4096];
  while (out.size() < max) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

bool write_text(const std::string& path, std::string_view text) {
  base::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return false;
  return ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
}

std::vector<pid_t> read_pids(const std::string& path) {
  std::vector<pid_t> out;
  std::istringstream in(read_small(path, 1 << 20));
  long v;
  while (in >> v) out.push_back(static_cast<pid_t>(v));
  return out;
}

// /proc/<pid>/stat, the fields we need.
struct ProcStat {
  pid_t pid = 0, ppid = 0, sid = 0;
  char state = '?';
  unsigned long long start = 0;  // clock ticks after boot: with the pid, a process's identity
};

bool read_stat(pid_t pid, ProcStat* out) {
  std::string s = read_small("/proc/" + std::to_string(pid) + "/stat", 4096);
  auto close = s.rfind(')');  // comm may hold spaces and parentheses
  if (close == std::string::npos || close + 2 >= s.size()) return false;
  std::istringstream in(s.substr(close + 2));
  // state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime
  // cutime cstime priority nice num_threads itrealvalue starttime
  long ppid, pgrp, sid;
  std::string skip;
  if (!(in >> out->state >> ppid >> pgrp >> sid)) return false;
  for (int i = 0; i < 15; ++i) in >> skip;
  if (!(in >> out->start)) return false;
  out->pid = pid;
  out->ppid = static_cast<pid_t>(ppid);
  out->sid = static_cast<pid_t>(sid);
  return true;
}

std::vector<ProcStat> all_processes() {
  std::vector<ProcStat> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    ProcStat st;
    if (read_stat(static_cast<pid_t>(pid), &st) && st.state != 'Z' && st.state != 'X') out.push_back(st);
  }
  ::closedir(d);
  return out;
}

bool environ_has(pid_t pid, const std::string& marker) {
  std::string env = read_small("/proc/" + std::to_string(pid) + "/environ", 256 * 1024);
  for (std::size_t at = 0; at < env.size();) {
    std::size_t end = env.find('\0', at);
    if (end == std::string::npos) end = env.size();
    if (std::string_view(env).substr(at, end - at) == marker) return true;
    at = end + 1;
  }
  return false;
}

int pidfd_open(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

// SIGKILL through a pidfd, only if `pid` is still the process that was scanned.
bool kill_checked(const ProcStat& seen) {
  base::UniqueFd fd(pidfd_open(seen.pid));
  if (!fd) return false;
  ProcStat now;
  if (!read_stat(seen.pid, &now) || now.start != seen.start) return false;  // reused
  return ::syscall(SYS_pidfd_send_signal, fd.get(), SIGKILL, nullptr, 0) == 0;
}

// Does the comma-separated `list` name `item`?
bool lists(const std::string& list, const std::string& item) {
  std::istringstream in(list);
  for (std::string x; std::getline(in, x, ',');)
    if (x == item) return true;
  return false;
}

// The cgroup directory this process is in ("<mount><path>"), or "" with *why: on the v2
// hierarchy when `controller` is empty, else on the v1 hierarchy that has `controller`.
// mountinfo gives where the hierarchy is mounted and which of its paths the mount shows
// (its root); /proc/self/cgroup gives our path in it.
std::string own_cgroup_dir(const std::string& controller, std::string* why) {
  const bool v2 = controller.empty();
  std::string mount, root;
  std::istringstream mi(read_small("/proc/self/mountinfo", 1 << 20));
  for (std::string line; std::getline(mi, line);) {
    auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream tail(line.substr(dash + 3));
    std::string fstype, source, options;
    tail >> fstype >> source >> options;
    if (v2 ? fstype != "cgroup2" : (fstype != "cgroup" || !lists(options, controller))) continue;
    std::istringstream f(line.substr(0, dash));
    std::string id, parent, dev;
    f >> id >> parent >> dev >> root >> mount;
    break;
  }
  if (mount.empty()) {
    *why = v2 ? "no cgroup2 mount" : "no cgroup hierarchy has the " + controller + " controller";
    return {};
  }
  // Lines are "hierarchy-id:controllers:path"; v2's is "0::path".
  std::istringstream cg(read_small("/proc/self/cgroup"));
  for (std::string line; std::getline(cg, line);) {
    auto c1 = line.find(':'), c2 = line.find(':', c1 + 1);
    if (c1 == std::string::npos || c2 == std::string::npos) continue;
    std::string names = line.substr(c1 + 1, c2 - c1 - 1);
    if (v2 ? line.compare(0, c2 + 1, "0::") != 0 : !lists(names, controller)) continue;
    std::string path = line.substr(c2 + 1);
    if (root != "/" && path.rfind(root, 0) == 0) path = path.substr(root.size());
    if (path == "/") path.clear();
    return mount + path;
  }
  *why = v2 ? "not in a cgroup v2" : "not in a " + controller + " cgroup";
  return {};
}

bool has_word(const std::string& text, const std::string& word) {
  std::istringstream in(text);
  for (std::string w; in >> w;)
    if (w == word) return true;
  return false;
}

// The number after `key` in a flat-keyed cgroup file ("oom_kill 3"), or 0.
std::uint64_t key_value(const std::string& text, std::string_view key) {
  std::istringstream in(text);
  for (std::string k; in >> k;) {
    std::uint64_t v = 0;
    if (!(in >> v)) {
      in.clear();
      continue;
    }
    if (k == key) return v;
  }
  return 0;
}

constexpr const char* kControllers[3] = {"memory", "pids", "cpu"};

// Kills what a cgroup directory holds and removes it with its children; best effort.
void remove_tree(const std::string& dir) {
  write_text(dir + "/cgroup.kill", "1");
  if (DIR* d = ::opendir(dir.c_str())) {
    std::vector<std::string> subs;
    while (dirent* e = ::readdir(d))
      if (e->d_type == DT_DIR && e->d_name[0] != '.') subs.emplace_back(dir + "/" + e->d_name);
    ::closedir(d);
    for (const auto& s : subs) remove_tree(s);
  }
  for (int i = 0; i < 100 && ::rmdir(dir.c_str()) < 0 && errno == EBUSY; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
}

}  // namespace

const char* tier_name(ContainmentTier tier) noexcept {
  switch (tier) {
    case ContainmentTier::kCgroup: return "cgroup";
    case ContainmentTier::kPidNamespace: return "pid-namespace";
    case ContainmentTier::kTracked: return "tracked";
    case ContainmentTier::kNone: return "none";
  }
  return "?";
}

LingeringProcess describe_process(pid_t pid) {
  LingeringProcess p;
  p.pid = pid;
  p.comm = read_small("/proc/" + std::to_string(pid) + "/comm", 64);
  while (!p.comm.empty() && p.comm.back() == '\n') p.comm.pop_back();
  p.command = read_small("/proc/" + std::to_string(pid) + "/cmdline", 4096);
  while (!p.command.empty() && p.command.back() == '\0') p.command.pop_back();
  std::replace(p.command.begin(), p.command.end(), '\0', ' ');
  if (p.command.empty() && !p.comm.empty()) p.command = "[" + p.comm + "]";
  if (p.command.size() > 200) p.command.resize(200);
  return p;
}

void await_gone(const std::vector<pid_t>& pids, std::chrono::milliseconds max) {
  auto deadline = std::chrono::steady_clock::now() + max;
  std::vector<pid_t> left = pids;
  while (!left.empty()) {
    std::erase_if(left, [](pid_t pid) {
      siginfo_t si{};
      if (::waitid(P_PID, static_cast<id_t>(pid), &si, WEXITED | WNOHANG) == 0 && si.si_pid == pid) return true;
      ProcStat st;  // not ours: gone once it is a zombie of its own parent, or no more
      return !read_stat(pid, &st) || st.state == 'Z' || st.state == 'X';
    });
    if (left.empty() || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds{2});
  }
}

// ---- Containment ----

Containment::Containment(base::ContainmentMode mode, pid_t owner) : owner_(owner > 0 ? owner : ::getpid()) {
  if (mode == base::ContainmentMode::kTracked || mode == base::ContainmentMode::kOff) {
    why_not_ = "containment mode is tracked";
    return;
  }
  std::string parent = own_cgroup_dir("", &why_not_);
  if (parent.empty()) {
    UEXEC_LOG(kInfo, "containment: tracking descendants ({})", why_not_);
    return;
  }
  // One subtree per Containment: a process may hold several managers (tests do).
  static std::atomic<unsigned> instances{0};
  instance_ = instances++;
  root_ = parent + "/uexec-" + std::to_string(owner_) + "-" + std::to_string(instance_);
  remove_stale_in(parent);
  // Ours from an earlier run of this pid: emptied. Our holder's: its sessions are ours now.
  if (::mkdir(root_.c_str(), 0755) < 0 && errno == EEXIST && owner_ == ::getpid())
    remove_tree(root_), ::mkdir(root_.c_str(), 0755);
  if (::access(root_.c_str(), F_OK) != 0) {
    why_not_ = "cannot make " + root_ + ": " + std::strerror(errno);
    root_.clear();
    UEXEC_LOG(kInfo, "containment: tracking descendants ({})", why_not_);
    return;
  }
  if (::access((root_ + "/cgroup.kill").c_str(), W_OK) != 0) {
    why_not_ = "no writable cgroup.kill (Linux 5.14+) in " + root_;
    ::rmdir(root_.c_str());
    root_.clear();
    UEXEC_LOG(kInfo, "containment: tracking descendants ({})", why_not_);
    return;
  }
  root_fd_.reset(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root_fd_) {
    why_not_ = "cannot open " + root_;
    ::rmdir(root_.c_str());
    root_.clear();
    return;
  }
  UEXEC_LOG(kDebug, "containment: a cgroup per session under {}", root_);
}

Containment::~Containment() {
  sweep_retired();
  for (auto& h : homes_)
    if (!h.v1_dir.empty()) remove_tree(h.v1_dir);  // sessions are gone: nothing left in them
  if (!cgroups()) return;
  // Sessions killed their own groups as they went; this catches anything a failed kill left.
  write_text(root_ + "/cgroup.kill", "1");
  for (int i = 0; i < 200; ++i) {  // ≤ 1 s for SIGKILLed processes to finish exiting
    if (read_small(root_ + "/cgroup.events").find("populated 0") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  }
  for (const auto& dir : retired_) ::rmdir(dir.c_str());
  root_fd_.reset();
  remove_tree(root_);
}

void Containment::remove_stale_in(const std::string& parent) {
  DIR* d = ::opendir(parent.c_str());
  if (!d) return;
  std::vector<std::string> stale;
  while (dirent* e = ::readdir(d)) {
    if (std::strncmp(e->d_name, "uexec-", 6) != 0) continue;
    char* end = nullptr;
    long pid = std::strtol(e->d_name + 6, &end, 10);  // uexec-<pid>-<instance>
    if (pid <= 0 || (*end != '\0' && *end != '-') || pid == ::getpid() || pid == owner_) continue;
    if (::kill(static_cast<pid_t>(pid), 0) < 0 && errno == ESRCH) stale.emplace_back(parent + "/" + e->d_name);
  }
  ::closedir(d);
  for (const auto& dir : stale) {
    UEXEC_LOG(kInfo, "containment: removing {} (its manager is gone)", dir);
    remove_tree(dir);
  }
}

std::unique_ptr<ContainmentGroup> Containment::make_group(const std::vector<std::string>& env) {
  sweep_retired();
  std::unique_ptr<ContainmentGroup> g(new ContainmentGroup(this, ContainmentTier::kTracked));
  for (const auto& kv : env)
    if (kv.rfind("UEXEC_SESSION_ID=", 0) == 0) g->marker_ = kv;
  if (!cgroups()) return g;
  std::string name = "s" + std::to_string(next_++);
  int rc;
  while ((rc = ::mkdirat(root_fd_.get(), name.c_str(), 0755)) < 0 && errno == EEXIST)
    name = "s" + std::to_string(next_++);  // a group still being emptied (retired)
  if (rc < 0) {
    UEXEC_LOG(kWarn, "containment: mkdir {}/{}: {}; tracking this session", root_, name, std::strerror(errno));
    return g;
  }
  g->path_ = root_ + "/" + name;
  g->dir_.reset(::openat(root_fd_.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!g->dir_) {
    ::rmdir(g->path_.c_str());
    g->path_.clear();
    return g;
  }
  g->tier_ = ContainmentTier::kCgroup;
  return g;
}

Containment::ControllerHome& Containment::home(int controller) {
  ControllerHome& h = homes_[controller];
  if (h.probed) return h;
  h.probed = true;
  const std::string name = kControllers[controller];
  if (cgroups()) {
    // Available in our subtree once our cgroup's parent delegates it (the root always can).
    if (!has_word(read_small(root_ + "/cgroup.controllers"), name)) {
      std::string parent = root_.substr(0, root_.rfind('/'));
      write_text(parent + "/cgroup.subtree_control", "+" + name);
    }
    if (has_word(read_small(root_ + "/cgroup.controllers"), name) &&
        write_text(root_ + "/cgroup.subtree_control", "+" + name)) {
      h.v2 = true;
      UEXEC_LOG(kDebug, "limits: the {} controller in cgroup v2 under {}", name, root_);
      return h;
    }
  }
  std::string parent = own_cgroup_dir(name, &h.why);
  if (parent.empty()) return h;
  remove_stale_in(parent);
  std::string dir = parent + "/uexec-" + std::to_string(owner_) + "-" + std::to_string(instance_);
  if (::mkdir(dir.c_str(), 0755) < 0 && errno == EEXIST && owner_ == ::getpid())
    remove_tree(dir), ::mkdir(dir.c_str(), 0755);
  if (::access((dir + "/cgroup.procs").c_str(), W_OK) != 0) {
    h.why = "cannot make " + dir + ": " + std::strerror(errno);
    ::rmdir(dir.c_str());
    return h;
  }
  h.v1_dir = dir;
  UEXEC_LOG(kDebug, "limits: the {} controller in cgroup v1 under {}", name, dir);
  return h;
}

base::Result<std::unique_ptr<LimitGroup>> Containment::make_limits(const base::SessionLimits& limits,
                                                                   ContainmentGroup* group, bool supervised) {
  using base::Errc;
  using base::Error;
  sweep_retired();
  std::unique_ptr<LimitGroup> lg(new LimitGroup(this));
  const bool wanted[3] = {limits.memory_max_bytes.has_value(), limits.pids_max.has_value(), limits.cpu_max.has_value()};
  const char* what[3] = {"a memory limit", "a pids limit", "a cpu limit"};
  std::string v1_name;  // one name for the session in every v1 hierarchy
  for (int c = 0; c < 3; ++c) {
    if (!wanted[c]) continue;
    ControllerHome& h = home(c);
    LimitGroup::Dir d{c, false, {}, false, {}};
    if (h.v2 && group && group->tier() == ContainmentTier::kCgroup && !supervised) {
      d.v2 = true;
      d.path = group->path_;
    } else if (!h.v1_dir.empty()) {
      if (v1_name.empty()) {
        v1_name = "l" + std::to_string(next_++);
        for (const auto& home : homes_)  // leftovers of a retired name: pick another
          if (!home.v1_dir.empty() && ::access((home.v1_dir + "/" + v1_name).c_str(), F_OK) == 0) {
            v1_name = "l" + std::to_string(next_++);
            break;
          }
      }
      d.path = h.v1_dir + "/" + v1_name;
      if (::mkdir(d.path.c_str(), 0755) < 0)
        return Error{Errc::kSystem, errno, fmt::format("{}: mkdir {}", what[c], d.path)};
      d.owned = true;
      d.procs.reset(::open((d.path + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
      if (!d.procs) {
        int err = errno;
        ::rmdir(d.path.c_str());
        return Error{Errc::kSystem, err, fmt::format("{}: open {}/cgroup.procs", what[c], d.path)};
      }
    } else {
      std::string why = h.why.empty() ? "the " + std::string(kControllers[c]) + " controller is not delegated" : h.why;
      if (h.v2 && supervised) why = "a sandboxed session is not in its containment cgroup";
      return Error{Errc::kUnsupported, 0, fmt::format("{} needs a cgroup controller the manager can use: {}", what[c], why)};
    }
    // The values, in each version's files.
    std::vector<std::pair<std::string, std::string>> writes;
    if (c == 0) {
      std::string n = std::to_string(*limits.memory_max_bytes);
      writes = {{d.v2 ? "memory.max" : "memory.limit_in_bytes", n}};
    } else if (c == 1) {
      writes = {{"pids.max", std::to_string(*limits.pids_max)}};
    } else {
      long quota = std::max(1000L, std::lround(*limits.cpu_max * 100000.0));
      if (d.v2) writes = {{"cpu.max", fmt::format("{} 100000", quota)}};
      else writes = {{"cpu.cfs_period_us", "100000"}, {"cpu.cfs_quota_us", std::to_string(quota)}};
    }
    std::string path = d.path;
    lg->dirs_.push_back(std::move(d));  // removed with `lg` if a write fails
    for (const auto& [file, value] : writes)
      if (!write_text(path + "/" + file, value))
        return Error{Errc::kSystem, errno, fmt::format("{}: write {} to {}/{}", what[c], value, path, file)};
    if (c == 0) {  // no escape into swap, where there is swap accounting (best effort)
      const bool v2 = lg->dirs_.back().v2;
      write_text(path + (v2 ? "/memory.swap.max" : "/memory.memsw.limit_in_bytes"), v2 ? "0" : std::to_string(*limits.memory_max_bytes));
    }
  }
  return lg;
}

void Containment::retire(std::string path) {
  if (::rmdir(path.c_str()) == 0 || errno == ENOENT) return;
  retired_.push_back(std::move(path));  // killed processes still exiting: later
}

void Containment::sweep_retired() {
  std::erase_if(retired_, [](const std::string& p) { return ::rmdir(p.c_str()) == 0 || errno == ENOENT; });
}

// ---- ContainmentGroup ----

ContainmentGroup::~ContainmentGroup() {
  dir_.reset();
  if (!path_.empty()) owner_->retire(std::move(path_));
}

std::vector<pid_t> ContainmentGroup::members() const {
  if (tier_ == ContainmentTier::kCgroup) {
    auto pids = read_pids(path_ + "/cgroup.procs");
    std::erase(pids, leader_);
    return pids;
  }
  if (tier_ == ContainmentTier::kTracked) return tracked_members();
  return {};
}

bool Containment::adoptable_cgroup(const std::string& path) const {
  return cgroups() && path.size() > root_.size() && path.compare(0, root_.size() + 1, root_ + "/") == 0 &&
         path.find('/', root_.size() + 1) == std::string::npos && path.find("..") == std::string::npos &&
         ::access(path.c_str(), F_OK) == 0;
}

std::unique_ptr<ContainmentGroup> Containment::adopt_group(const std::string& path, pid_t leader, std::string marker,
                                                           std::optional<bool> adoptable) {
  std::unique_ptr<ContainmentGroup> g(new ContainmentGroup(this, ContainmentTier::kTracked));
  g->marker_ = std::move(marker);
  g->leader_ = leader;
  if (adoptable ? *adoptable : adoptable_cgroup(path)) {
    g->path_ = path;
    g->tier_ = ContainmentTier::kCgroup;
  }
  return g;
}

std::vector<pid_t> ContainmentGroup::tracked_members() const {
  if (leader_ <= 0 && marker_.empty()) return {};
  const pid_t self = ::getpid();
  auto procs = all_processes();
  std::unordered_set<pid_t> in;
  for (const auto& p : procs) {
    if (p.pid == self || p.pid == leader_) continue;
    // The leader's session id, on anything but a new session leader that reused its pid.
    bool seed = leader_ > 0 && p.sid == leader_;
    // An orphan that left the session (setsid) but kept the session's environment.
    if (!seed && !marker_.empty() && (p.ppid == self || p.ppid == 1)) seed = environ_has(p.pid, marker_);
    if (seed) in.insert(p.pid);
  }
  // Everything below a member is a member.
  for (bool grew = !in.empty(); grew;) {
    grew = false;
    for (const auto& p : procs)
      if (!in.count(p.pid) && p.pid != self && p.pid != leader_ && in.count(p.ppid)) grew |= in.insert(p.pid).second;
  }
  return {in.begin(), in.end()};
}

std::vector<LingeringProcess> ContainmentGroup::kill_all() {
  std::vector<LingeringProcess> out;
  if (tier_ == ContainmentTier::kCgroup) {
    for (pid_t pid : members()) out.push_back(describe_process(pid));
    if (out.empty()) return out;
    bool ok = write_text(path_ + "/cgroup.kill", "1");
    for (auto& l : out) l.killed = ok;
    return out;
  }
  if (tier_ != ContainmentTier::kTracked) return out;
  std::map<pid_t, std::size_t> seen;
  for (int sweep = 0; sweep < 3; ++sweep) {
    auto pids = tracked_members();
    if (pids.empty()) break;
    for (pid_t pid : pids) {
      ProcStat st;
      if (!read_stat(pid, &st)) continue;
      auto [it, fresh] = seen.emplace(pid, out.size());
      if (fresh) out.push_back(describe_process(pid));
      if (kill_checked(st)) out[it->second].killed = true;
    }
  }
  return out;
}

// ---- LimitGroup ----

LimitGroup::~LimitGroup() {
  for (auto& d : dirs_) {
    d.procs.reset();
    if (d.owned) owner_->retire(std::move(d.path));
  }
}

std::vector<int> LimitGroup::join_fds() const {
  std::vector<int> out;
  for (const auto& d : dirs_)
    if (d.procs) out.push_back(d.procs.get());
  return out;
}

LimitEvents LimitGroup::events() const {
  LimitEvents e;
  for (const auto& d : dirs_) {
    if (d.controller == 0) {
      e.oom_kills += key_value(read_small(d.path + (d.v2 ? "/memory.events" : "/memory.oom_control")), "oom_kill");
    } else if (d.controller == 1) {
      e.pids_max_hits += key_value(read_small(d.path + "/pids.events"), "max");
    } else if (d.v2) {
      e.throttled_us += key_value(read_small(d.path + "/cpu.stat"), "throttled_usec");
    } else {
      e.throttled_us += key_value(read_small(d.path + "/cpu.stat"), "throttled_time") / 1000;  // ns
    }
  }
  return e;
}

}  // namespace uexec::session
