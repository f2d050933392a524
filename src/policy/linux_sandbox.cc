#include "policy/linux_sandbox.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <linux/securebits.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "policy/landlock.h"
#include "policy/seccomp.h"

// The uexec-init binary, embedded by embed_init.py.
extern "C" const unsigned char uexec_init_blob[];
extern "C" const unsigned char uexec_init_blob_end[];

namespace uexec::policy {

using base::Errc;
using base::Error;
using base::Result;
using base::UniqueFd;

namespace {

// ---- the plan pid 1 reads (built in the parent; the child only reads it, but for the
// failure detail and the clone fds, which live in preallocated slots) ----

constexpr const char* kDevNodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
constexpr int kNumDevNodes = 6;

struct ViewPlan {
  std::string uid_map, gid_map;
  bool full_write = false;
  bool private_tmp = false;
  std::vector<std::string> writable;
  std::vector<std::string> pins;       // writable, made mount points of themselves (immovable)
  std::vector<std::string> read_only;  // carve-outs and stubs
  std::vector<std::string> mask_files, mask_dirs;
  std::vector<std::string> optional_masks;      // hidden sockets: gone by now is fine
  std::vector<std::string> optional_mask_dirs;  // hidden control planes: a daemon that exited since is fine
  // Child scratch, sized here so the child never allocates.
  mutable std::vector<int> writable_fds;
  mutable int dev_fds[kNumDevNodes] = {-1, -1, -1, -1, -1, -1};
  mutable int console_fd = -1;
  mutable char console_path[64] = {};
  mutable const char* failed = nullptr;
};

// ---- async-signal-safe helpers for the steps ----

int write_file(const char* path, const char* data) noexcept {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  ssize_t n = ::write(fd, data, std::strlen(data));
  int err = n < 0 ? errno : 0;
  ::close(fd);
  return err;
}

// A mount target, opened without following any symlink (a swapped-in link fails the spawn).
int open_target(const char* path) noexcept {
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  int fd = static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how));
  return fd;
}

// A detached clone of the mount tree at `path`, reached without following any symlink (a root
// swapped for a symlink after resolve() fails the spawn instead of exposing the link's target).
int clone_nofollow(const char* path, bool recursive) noexcept {
  int at = open_target(path);
  if (at < 0) return -1;
  int fd = ::open_tree(at, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0));
  int err = errno;
  ::close(at);
  errno = err;
  return fd;
}

// mkdir -p of `path`'s components below `/tmp` (a writable root inside a private /tmp).
int make_dirs(const char* path) noexcept {
  char buf[4096];
  std::size_t n = std::strlen(path);
  if (n >= sizeof buf) return ENAMETOOLONG;
  std::memcpy(buf, path, n + 1);
  for (std::size_t i = 1; i <= n; ++i) {
    if (buf[i] != '/' && buf[i] != '\0') continue;
    char saved = buf[i];
    buf[i] = '\0';
    if (::mkdir(buf, 0755) < 0 && errno != EEXIST) return errno;
    buf[i] = saved;
  }
  return 0;
}

// Attach detached mount `src` at `path`; closes `src`.
int attach(int src, const char* path) noexcept {
  int target = open_target(path);
  if (target < 0) {
    int err = errno;
    ::close(src);
    return err;
  }
  int rc = ::move_mount(src, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
  int err = rc < 0 ? errno : 0;
  ::close(target);
  ::close(src);
  return err;
}

int set_attr(int fd, unsigned long long set, bool recursive) noexcept {
  mount_attr attr{};
  attr.attr_set = set;
  unsigned flags = AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0);
  return ::mount_setattr(fd, "", flags, &attr, sizeof attr) < 0 ? errno : 0;
}

int step_maps(const void* arg, int) noexcept {
  const auto* p = static_cast<const ViewPlan*>(arg);
  if (int e = write_file("/proc/self/setgroups", "deny")) return p->failed = "/proc/self/setgroups", e;
  if (int e = write_file("/proc/self/uid_map", p->uid_map.c_str())) return p->failed = "/proc/self/uid_map", e;
  if (int e = write_file("/proc/self/gid_map", p->gid_map.c_str())) return p->failed = "/proc/self/gid_map", e;
  return 0;
}

int step_view(const void* arg, int tty) noexcept {
  const auto* p = static_cast<const ViewPlan*>(arg);
#define FAIL(path)       \
  do {                   \
    int e_ = errno;      \
    p->failed = (path);  \
    return e_;           \
  } while (0)
#define FAIL_E(e, path) \
  do {                  \
    p->failed = (path); \
    return (e);         \
  } while (0)
  // Nothing we mount propagates back to the host.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) < 0) FAIL("/ (make slave)");
  // Clones taken before / turns read-only: detached clones keep their own flags.
  for (std::size_t i = 0; i < p->writable.size(); ++i) {
    int fd = clone_nofollow(p->writable[i].c_str(), true);
    if (fd < 0) FAIL(p->writable[i].c_str());
    p->writable_fds[i] = fd;
  }
  for (int i = 0; i < kNumDevNodes; ++i) {
    char path[32] = "/dev/";
    std::strcat(path, kDevNodes[i]);
    p->dev_fds[i] = ::open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
  }
  if (tty >= 0) {
    // The session's PTY, by its name in our (copied) /dev/pts, before /dev is replaced.
    char link[32] = "/proc/self/fd/";
    char digits[12];
    int n = 0;
    for (unsigned v = static_cast<unsigned>(tty); n == 0 || v != 0; v /= 10) digits[n++] = static_cast<char>('0' + v % 10);
    std::size_t len = std::strlen(link);
    while (n > 0) link[len++] = digits[--n];
    link[len] = '\0';
    ssize_t got = ::readlink(link, p->console_path, sizeof p->console_path - 1);
    if (got > 0) {
      p->console_path[got] = '\0';
      p->console_fd = ::open_tree(AT_FDCWD, p->console_path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    }
  }
  if (!p->full_write) {
    mount_attr ro{};
    ro.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID;
    if (::mount_setattr(AT_FDCWD, "/", AT_RECURSIVE, &ro, sizeof ro) < 0) FAIL("/ (read-only)");
  }
  // A private /tmp first, so that writable roots inside it are attached on top of it.
  if (p->private_tmp &&
      ::mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=1g") < 0)
    FAIL("/tmp (private tmpfs)");
  for (std::size_t i = 0; i < p->writable.size(); ++i) {
    int fd = p->writable_fds[i];
    p->writable_fds[i] = -1;
    if (int e = set_attr(fd, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, true)) {
      ::close(fd);
      FAIL_E(e, p->writable[i].c_str());
    }
    const char* w = p->writable[i].c_str();
    if (p->private_tmp && std::strncmp(w, "/tmp/", 5) == 0)
      if (int e = make_dirs(w)) {
        ::close(fd);
        FAIL_E(e, w);
      }
    if (int e = attach(fd, w)) FAIL_E(e, w);
  }
  // Pins before the carve-outs they lead to (a later clone of a pin would not show them):
  // a mount point cannot be renamed, so no rename of an ancestor moves a carve-out away from
  // the path the host resolves later.
  for (const auto& pin : p->pins) {
    int fd = clone_nofollow(pin.c_str(), true);
    if (fd < 0) FAIL(pin.c_str());
    if (int e = attach(fd, pin.c_str())) FAIL_E(e, pin.c_str());
  }
  for (const auto& c : p->read_only) {
    // A carve-out that vanished since resolve() fails the spawn: skipping it would let the
    // command create it (a new .git/hooks) in a writable root.
    int fd = clone_nofollow(c.c_str(), true);
    if (fd < 0) FAIL(c.c_str());
    if (int e = set_attr(fd, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, true)) {
      ::close(fd);
      FAIL_E(e, c.c_str());
    }
    if (int e = attach(fd, c.c_str())) FAIL_E(e, c.c_str());
  }
  // Masks: an empty mode-000 file and directory on a detached tmpfs, cloned over each target.
  int fs = ::fsopen("tmpfs", FSOPEN_CLOEXEC);
  if (fs < 0) FAIL("fsopen tmpfs");
  if (::fsconfig(fs, FSCONFIG_SET_STRING, "size", "4k", 0) < 0 ||
      ::fsconfig(fs, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) < 0) {
    int e = errno;
    ::close(fs);
    FAIL_E(e, "fsconfig mask tmpfs");
  }
  int mnt = ::fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
  ::close(fs);
  if (mnt < 0) FAIL("fsmount mask tmpfs");
  int f = ::openat(mnt, "f", O_CREAT | O_WRONLY | O_CLOEXEC, 0);
  if (f < 0 || ::fchmod(f, 0) < 0 || ::mkdirat(mnt, "d", 0) < 0) {
    int e = errno;
    if (f >= 0) ::close(f);
    ::close(mnt);
    FAIL_E(e, "mask files");
  }
  ::close(f);
  auto mask = [p, mnt](const std::string& target, const char* src, bool optional) noexcept -> int {
    int fd = ::open_tree(mnt, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    if (fd < 0) return p->failed = target.c_str(), errno;
    if (int e = set_attr(fd, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, false)) {
      ::close(fd);
      return p->failed = target.c_str(), e;
    }
    int e = attach(fd, target.c_str());
    if (e == ENOENT && optional) return 0;
    if (e != 0) p->failed = target.c_str();
    return e;
  };
  int err = 0;
  for (const auto& t : p->mask_files)
    if (err == 0) err = mask(t, "f", false);
  for (const auto& t : p->optional_masks)
    if (err == 0) err = mask(t, "f", true);
  for (const auto& t : p->mask_dirs)
    if (err == 0) err = mask(t, "d", false);
  for (const auto& t : p->optional_mask_dirs)
    if (err == 0) err = mask(t, "d", true);
  ::close(mnt);
  if (err != 0) return err;
  // A fresh /dev.
  if (::mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k") < 0) FAIL("/dev (tmpfs)");
  for (int i = 0; i < kNumDevNodes; ++i) {
    if (p->dev_fds[i] < 0) continue;
    char path[32] = "/dev/";
    std::strcat(path, kDevNodes[i]);
    int fd = ::open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0666);
    if (fd < 0) FAIL("/dev node");
    ::close(fd);
    int src = p->dev_fds[i];
    p->dev_fds[i] = -1;
    if (int e = attach(src, path)) FAIL_E(e, "/dev node");
  }
  if (::mkdir("/dev/pts", 0755) < 0 ||
      ::mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620") < 0)
    FAIL("/dev/pts");
  if (::symlink("pts/ptmx", "/dev/ptmx") < 0) FAIL("/dev/ptmx");
  if (p->console_fd >= 0) {
    int fd = ::open("/dev/console", O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0) FAIL("/dev/console");
    ::close(fd);
    int src = p->console_fd;
    p->console_fd = -1;
    if (int e = attach(src, "/dev/console")) FAIL_E(e, "/dev/console");
  }
  if (::mkdir("/dev/shm", 01777) < 0 ||
      ::mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=256m") < 0)
    FAIL("/dev/shm");
  if (::symlink("/proc/self/fd", "/dev/fd") < 0 || ::symlink("/proc/self/fd/0", "/dev/stdin") < 0 ||
      ::symlink("/proc/self/fd/1", "/dev/stdout") < 0 || ::symlink("/proc/self/fd/2", "/dev/stderr") < 0)
    FAIL("/dev links");
  if (::mount(nullptr, "/dev", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC, nullptr) < 0)
    FAIL("/dev (read-only)");
  // We are pid 1 of the new pid namespace: its own /proc.
  if (::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) < 0) FAIL("/proc");
  // Its global knobs read-only: our uid 0 maps to the host's, and sysctls check only that
  // (core_pattern would be a way out).
  for (const char* k : {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"}) {
    int fd = clone_nofollow(k, true);
    if (fd < 0) {
      if (errno == ENOENT) continue;
      FAIL(k);
    }
    if (int e = set_attr(fd, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, true)) {
      ::close(fd);
      FAIL_E(e, k);
    }
    if (int e = attach(fd, k)) FAIL_E(e, k);
  }
#undef FAIL
#undef FAIL_E
  return 0;
}

// The highest capability number this kernel knows (read once, in the parent).
int cap_last_cap() {
  static int last = [] {
    int v = 63;
    if (FILE* f = std::fopen("/proc/sys/kernel/cap_last_cap", "r")) {
      if (std::fscanf(f, "%d", &v) != 1) v = 63;
      std::fclose(f);
    }
    return v;
  }();
  return last;
}

// The command's privileges: nothing to gain, nothing kept. `arg` points at cap_last_cap.
int step_privileges(const void* arg, int) noexcept {
  const int last = *static_cast<const int*>(arg);
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) return errno;
  // Without CAP_SETPCAP (an unprivileged manager, no namespace) there is nothing to drop.
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (::syscall(SYS_capget, &hdr, data) == 0 && (data[0].effective & (1U << CAP_SETPCAP))) {
    if (::prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                                       SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
                                       SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED) < 0)
      return errno;
    for (int cap = 0; cap <= last; ++cap)
      if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL) return errno;
  }
  ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  __user_cap_data_struct none[2]{};
  hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  if (::syscall(SYS_capset, &hdr, none) < 0) return errno;
  return 0;
}

// ---- what a spawn keeps alive: plan, ruleset, filter, stubs ----

// Missing protected names get an empty directory while a session needs it (docs/sandbox.md §3.3,
// StubRegistry): counted by path, removed when the last user goes if we made it and it is
// still empty.
class StubRegistry {
 public:
  static constexpr const char* kStubMark = "user.uexec.stub";
  static StubRegistry& get() {
    static StubRegistry r;
    return r;
  }
  Result<void> acquire(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& e = stubs_[path];
    if (e.users == 0) {
      e.created = ::mkdir(path.c_str(), 0755) == 0;
      if (!e.created && errno != EEXIST) {
        int err = errno;
        stubs_.erase(path);
        return Error::sys("create read-only stub " + path, err);
      }
      // Our stubs carry a mark, so that one left by a manager that died is recognised (and
      // removed with its next user) instead of staying in the workspace for good.
      if (e.created) {
        ::setxattr(path.c_str(), kStubMark, "1", 1, 0);
      } else {
        char v[4];
        e.created = ::getxattr(path.c_str(), kStubMark, v, sizeof v) > 0;
      }
    }
    ++e.users;
    return {};
  }
  void release(const std::string& path) noexcept {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = stubs_.find(path);
    if (it == stubs_.end()) return;
    if (--it->second.users == 0) {
      if (it->second.created) ::rmdir(path.c_str());  // fails harmlessly if not empty
      stubs_.erase(it);
    }
  }

 private:
  struct Entry {
    int users = 0;
    bool created = false;
  };
  std::mutex mu_;
  std::map<std::string, Entry> stubs_;
};

struct StubLease {
  std::vector<std::string> paths;
  ~StubLease() {
    for (const auto& s : paths) StubRegistry::get().release(s);
  }
};

struct Launch {
  int last_cap = cap_last_cap();
  ViewPlan view;
  LandlockRuleset landlock;
  std::shared_ptr<const BpfProgram> bpf;
  std::shared_ptr<const BpfProgram> notify_bpf;
  SeccompNotifyStep notify;
  // The command's process sends its seccomp listener to pid 1 (namespaces) or to the
  // manager (Landlock-only: pty/seccomp_listener.h) on this pair.
  UniqueFd command_end, init_end;
  std::shared_ptr<void> stubs;
};

// uexec-init as a sealed memfd, copied once from the copy embedded in this executable
// (embed_init.py): no file a sandbox could write decides what runs as pid 1.
Result<int> init_fd() {
  static std::mutex mu;
  static int fd = -1;
  std::lock_guard<std::mutex> lock(mu);
  if (fd >= 0) return fd;
  UniqueFd mem(static_cast<int>(::syscall(SYS_memfd_create, "uexec-init", MFD_CLOEXEC | MFD_ALLOW_SEALING)));
  if (!mem) return Error::sys("memfd_create uexec-init");
  const unsigned char* p = uexec_init_blob;
  std::size_t left = static_cast<std::size_t>(uexec_init_blob_end - uexec_init_blob);
  if (left == 0) return Error{Errc::kPolicy, 0, "BackendUnavailable: this build has no uexec-init"};
  while (left > 0) {
    ssize_t w = ::write(mem.get(), p, left);
    if (w <= 0) return Error::sys("copy uexec-init");
    p += w;
    left -= static_cast<std::size_t>(w);
  }
  ::fchmod(mem.get(), 0555);
  ::fcntl(mem.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
  fd = mem.release();
  return fd;
}

// Can we make a user + mount + pid namespace and mount in it? (A child, once.)
bool probe_userns(std::string* why) {
  pid_t pid = ::fork();
  if (pid < 0) {
    *why = std::string("fork: ") + std::strerror(errno);
    return false;
  }
  if (pid == 0) {
    uid_t uid = ::geteuid();
    gid_t gid = ::getegid();
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) _exit(10);
    char map[64];
    std::snprintf(map, sizeof map, "%u %u 1", uid, uid);
    if (write_file("/proc/self/setgroups", "deny") != 0) _exit(11);
    if (write_file("/proc/self/uid_map", map) != 0) _exit(12);
    std::snprintf(map, sizeof map, "%u %u 1", gid, gid);
    if (write_file("/proc/self/gid_map", map) != 0) _exit(13);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0) _exit(14);
    if (::mount("tmpfs", "/tmp", "tmpfs", 0, nullptr) < 0) _exit(15);
    _exit(0);
  }
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return true;
  const char* steps[] = {"unshare(CLONE_NEWUSER|CLONE_NEWNS)", "setgroups", "uid_map", "gid_map",
                         "mount propagation", "mount tmpfs"};
  int code = WIFEXITED(st) ? WEXITSTATUS(st) : 0;
  *why = code >= 10 && code <= 15 ? std::string(steps[code - 10]) + " failed" : "probe child died";
  return false;
}

// Both flavours of the filter (errno, and notify for the one that records denials) and the
// socketpair over which the command's side sends the notify listener to whoever answers it.
// `files`: the notify flavour holds the file calls too (SpawnSpec::file_records).
Result<void> prepare_seccomp(Launch& launch, bool network, bool deny_unix, FileRecords files) {
  auto bpf = seccomp_program(network, ::geteuid() == 0, /*notify=*/false, deny_unix);
  if (!bpf) return std::move(bpf).error();
  launch.bpf = *bpf;
  auto notify = seccomp_program(network, ::geteuid() == 0, /*notify=*/true, deny_unix, files);
  if (!notify) return std::move(notify).error();
  launch.notify_bpf = *notify;
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair) < 0) return Error::sys("socketpair seccomp listener");
  launch.command_end.reset(pair[0]);
  launch.init_end.reset(pair[1]);
  launch.notify = SeccompNotifyStep{launch.notify_bpf.get(), launch.bpf.get(), pair[0]};
  return {};
}

}  // namespace

Result<int> sandbox_init_fd() { return init_fd(); }

Result<std::shared_ptr<void>> acquire_stubs(const std::vector<std::string>& stubs) {
  auto lease = std::make_shared<StubLease>();
  for (const auto& s : stubs) {
    if (auto r = StubRegistry::get().acquire(s); !r) return std::move(r).error();
    lease->paths.push_back(s);
  }
  return std::shared_ptr<void>(std::move(lease));
}

const HostSupport& host_support() {
  static HostSupport h = [] {
    HostSupport s;
    s.userns = probe_userns(&s.userns_detail);
    s.landlock_abi = landlock_abi();
    if (::access("/usr/bin/bwrap", X_OK) == 0) {
      s.bwrap = "/usr/bin/bwrap";
      if (FILE* f = ::popen("/usr/bin/bwrap --version 2>/dev/null", "r")) {
        char line[128] = {};
        if (std::fgets(line, sizeof line, f)) s.bwrap_version = line;
        ::pclose(f);
        while (!s.bwrap_version.empty() && (s.bwrap_version.back() == '\n')) s.bwrap_version.pop_back();
      }
    }
    auto fd = init_fd();
    s.init = fd.has_value();
    if (!fd) s.init_detail = fd.error().context;
    return s;
  }();
  return h;
}

Result<void> add_namespace_sandbox(const ResolvedPolicy& policy, pty::SpawnSpec& spec) {
  const HostSupport& host = host_support();
  if (!host.userns)
    return Error{Errc::kPolicy, 0, "BackendUnavailable: user namespaces do not work here (" + host.userns_detail + ")"};
  auto init = init_fd();
  if (!init) return std::move(init).error();
  auto launch = std::make_shared<Launch>();
  ViewPlan& v = launch->view;
  v.uid_map = std::to_string(::geteuid()) + " " + std::to_string(::geteuid()) + " 1";
  v.gid_map = std::to_string(::getegid()) + " " + std::to_string(::getegid()) + " 1";
  v.full_write = policy.full_write;
  v.private_tmp = policy.private_tmp;
  v.writable = policy.writable;
  v.writable_fds.assign(v.writable.size(), -1);
  v.pins = policy.pins;
  v.read_only = policy.read_only;
  auto stubs = acquire_stubs(policy.stubs);
  if (!stubs) return std::move(stubs).error();
  launch->stubs = std::move(*stubs);
  v.read_only.insert(v.read_only.end(), policy.stubs.begin(), policy.stubs.end());
  v.mask_files = policy.deny_files;
  v.mask_dirs = policy.deny_dirs;
  v.optional_mask_dirs = policy.hide_dirs;
  v.optional_masks = policy.hide_files;

  bool layered = landlock_abi() >= 2;
  if (layered) {
    auto rs = landlock_ruleset(policy, /*view=*/true);
    if (!rs) return std::move(rs).error();
    launch->landlock = std::move(*rs);
  }
  // The notify flavour: pid 1 answers and records what the filter denies.
  if (auto r = prepare_seccomp(*launch, policy.network, /*deny_unix=*/false, file_records_for(spec.file_records.get()));
      !r)
    return r;

  spec.ns_flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | (policy.network ? 0 : CLONE_NEWNET);
  spec.init_fd = *init;
  spec.setup_steps.push_back({step_maps, &launch->view, "sandbox: user namespace maps", &launch->view.failed});
  spec.setup_steps.push_back({step_view, &launch->view, "sandbox: mount view", &launch->view.failed});
  if (layered) spec.setup_steps.push_back({landlock_add_view_rules, &launch->landlock, "sandbox: landlock view rules"});
  spec.steps.push_back({step_privileges, &launch->last_cap, "sandbox: drop privileges"});
  if (layered) spec.steps.push_back({landlock_restrict, &launch->landlock, "sandbox: landlock_restrict_self"});
  spec.steps.push_back({apply_seccomp_notify, &launch->notify, "sandbox: seccomp"});
  spec.supervisor_channel = launch->init_end.get();
  // Deny-read files that appear later are masked by init on the manager's request.
  spec.mask_requests = launch->command_end.get();
  spec.late_deny = policy.deny_patterns;
  spec.keep = std::move(launch);
  return {};
}

Result<void> add_landlock_sandbox(const ResolvedPolicy& policy, pty::SpawnSpec& spec) {
  if (policy.has_deny() || policy.deny_configured)
    return Error{Errc::kPolicy, 0, "PolicyNotExpressible: the Landlock-only backend cannot deny reads "
                                   "(deny-read needs the namespace backend)"};
  auto launch = std::make_shared<Launch>();
  auto rs = landlock_ruleset(policy, /*view=*/false);
  if (!rs) return std::move(rs).error();
  launch->landlock = std::move(*rs);
  // Host pathname sockets cannot be hidden here: no unix sockets at all (socketpair stays).
  // The notify flavour is answered and recorded by the manager itself: there is no pid 1 here.
  if (auto r = prepare_seccomp(*launch, policy.network, /*deny_unix=*/true, file_records_for(spec.file_records.get()));
      !r)
    return r;
  spec.steps.push_back({step_privileges, &launch->last_cap, "sandbox: drop privileges"});
  spec.steps.push_back({landlock_restrict, &launch->landlock, "sandbox: landlock_restrict_self"});
  spec.steps.push_back({apply_seccomp_notify, &launch->notify, "sandbox: seccomp"});
  spec.seccomp_listener_channel = launch->init_end.get();
  spec.keep = std::move(launch);
  return {};
}

}  // namespace uexec::policy
