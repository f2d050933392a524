#include "policy/bwrap.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <memory>

#include "policy/linux_sandbox.h"
#include "policy/seccomp.h"

namespace uexec::policy {

using base::Errc;
using base::Error;
using base::Result;

std::vector<std::string> bwrap_argv(const ResolvedPolicy& p, const BwrapInput& in) {
  std::vector<std::string> a = {in.bwrap, "--die-with-parent", "--unshare-user", "--unshare-pid", "--unshare-ipc"};
  if (!p.network) a.push_back("--unshare-net");
  a.push_back("--disable-userns");
  if (p.full_write) {
    a.insert(a.end(), {"--bind", "/", "/"});
  } else {
    a.insert(a.end(), {"--ro-bind", "/", "/"});
  }
  a.insert(a.end(), {"--dev", "/dev", "--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys",
                     "--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger"});
  if (p.private_tmp) a.insert(a.end(), {"--perms", "1777", "--tmpfs", "/tmp"});
  // Writable roots and pins (mount points, so no rename moves a carve-out away), parents
  // first: bwrap binds the host's tree, so a later bind of a parent would cover its child's.
  std::vector<std::string> binds = p.writable;
  binds.insert(binds.end(), p.pins.begin(), p.pins.end());
  std::sort(binds.begin(), binds.end());
  for (const auto& b : binds) a.insert(a.end(), {"--bind", b, b});
  // -try: a carve-out removed since resolve() is nothing left to protect, not a failure.
  for (const auto& c : p.read_only) a.insert(a.end(), {"--ro-bind-try", c, c});
  for (const auto& s : p.stubs) a.insert(a.end(), {"--perms", "0555", "--tmpfs", s, "--remount-ro", s});
  for (const auto* dirs : {&p.deny_dirs, &p.hide_dirs})
    for (const auto& d : *dirs) a.insert(a.end(), {"--perms", "0000", "--tmpfs", d, "--remount-ro", d});
  for (const auto* files : {&p.deny_files, &p.hide_files})
    for (const auto& f : *files) a.insert(a.end(), {"--ro-bind", in.mask_file, f});
  a.insert(a.end(), {"--cap-drop", "ALL", "--chdir", in.cwd});
  if (in.seccomp_fd >= 0) a.insert(a.end(), {"--seccomp", std::to_string(in.seccomp_fd)});
  a.push_back("--");
  a.insert(a.end(), in.command.begin(), in.command.end());
  return a;
}

namespace {

struct BwrapLaunch {
  base::UniqueFd seccomp;
  base::UniqueFd notify;                  // the notify flavour, for uexec-init --exec
  base::UniqueFd command_end, manager_end;  // the listener's way out (pty/seccomp_listener.h)
  std::shared_ptr<void> stubs;
};

// One empty mode-000 file per user, in uexec's 0700 control directory (which every sandbox
// hides; $XDG_RUNTIME_DIR/uexec, else /tmp/uexec-$UID when that cannot be made). One left by
// an earlier run is reused as it is: reopening a mode-000 file to write it is EACCES to
// anyone but root. Anything else at the path (another size, mode or owner) is replaced.
Result<std::string> mask_file(ResolvedPolicy& p) {
  std::vector<std::string> dirs;
  if (const char* rt = std::getenv("XDG_RUNTIME_DIR"); rt && *rt) dirs.push_back(std::string(rt) + "/uexec");
  dirs.push_back("/tmp/uexec-" + std::to_string(::getuid()));
  std::string dir;
  for (const auto& d : dirs) {
    struct stat st {};
    if ((::mkdir(d.c_str(), 0700) == 0 || errno == EEXIST) && ::lstat(d.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
        st.st_uid == ::geteuid() && (st.st_mode & 0077) == 0) {
      dir = d;
      break;
    }
  }
  if (dir.empty()) return Error::sys("mkdir " + dirs.back() + " (bwrap's mask file; not ours or not 0700?)", EACCES);
  // Hidden, unless a hidden directory holds it already (a mount point inside a read-only
  // mode-000 tmpfs could not be made), and nothing inside it is masked separately.
  bool hidden = false;
  for (const auto& h : p.hide_dirs) hidden = hidden || path_within(dir, h);
  if (!hidden) {
    p.hide_dirs.push_back(dir);  // made just now, after resolve() looked
    for (auto* v : {&p.deny_files, &p.hide_files, &p.deny_dirs})
      std::erase_if(*v, [&dir](const std::string& s) { return path_within(s, dir); });
    std::erase_if(p.hide_dirs, [&dir](const std::string& s) { return s != dir && path_within(s, dir); });
  }
  std::string path = dir + "/mask-empty";
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() && st.st_size == 0 &&
      (st.st_mode & 07777) == 0)
    return path;
  std::string tmp = path + "." + std::to_string(::getpid());
  ::unlink(tmp.c_str());
  int fd = ::open(tmp.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0);
  if (fd < 0) return Error::sys("create " + tmp);
  ::fchmod(fd, 0);
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return Error::sys("rename " + tmp + " to " + path, err);
  }
  return path;
}

}  // namespace

Result<void> add_bwrap_sandbox(const ResolvedPolicy& policy, const std::string& cwd, pty::SpawnSpec& spec) {
  const HostSupport& host = host_support();
  if (host.bwrap.empty())
    return Error{Errc::kPolicy, 0, "BackendUnavailable: /usr/bin/bwrap (bubblewrap 0.8 or newer) is not installed"};
  ResolvedPolicy p = policy;
  auto mask = mask_file(p);
  if (!mask) return std::move(mask).error();
  auto bpf = seccomp_program(p.network, ::geteuid() == 0);
  if (!bpf) return std::move(bpf).error();
  auto mem = seccomp_memfd(**bpf);
  if (!mem) return std::move(mem).error();
  // A hidden path gone since resolve() (a daemon that exited, a socket closed) leaves nothing
  // to hide, and bwrap has no "mask if present" flag: drop it here, as late as the parent
  // can. One that goes between here and bwrap's mount still fails the spawn (narrow, not closed).
  for (auto* v : {&p.hide_dirs, &p.hide_files})
    std::erase_if(*v, [](const std::string& path) {
      struct stat st {};
      return ::lstat(path.c_str(), &st) != 0 && errno == ENOENT;
    });
  auto launch = std::make_shared<BwrapLaunch>();
  launch->seccomp = std::move(*mem);
  BwrapInput in;
  in.bwrap = host.bwrap;
  in.cwd = cwd;
  in.mask_file = *mask;
  in.seccomp_fd = 3;
  in.command = spec.argv;
  if (!spec.program.empty()) in.command[0] = spec.program;  // bwrap has no argv[0] override here
  std::vector<int> pass = {launch->seccomp.get()};
  // With uexec-init, the command loads the notify flavour itself and the manager records
  // what it denies (bwrap.h); without it, bwrap loads the errno flavour.
  if (auto init = sandbox_init_fd(); init && host.init) {
    auto notify = seccomp_program(p.network, ::geteuid() == 0, /*notify=*/true, /*deny_unix=*/false,
                                  file_records_for(spec.file_records.get()));
    if (!notify) return std::move(notify).error();
    auto notify_mem = seccomp_memfd(**notify);
    if (!notify_mem) return std::move(notify_mem).error();
    launch->notify = std::move(*notify_mem);
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair) < 0) return Error::sys("socketpair seccomp listener");
    launch->command_end.reset(pair[0]);
    launch->manager_end.reset(pair[1]);
    pass = {*init, launch->notify.get(), launch->seccomp.get(), launch->command_end.get()};
    in.seccomp_fd = -1;
    std::vector<std::string> wrapped = {"/proc/self/fd/3", "--exec", "4", "5", "6", "--"};
    wrapped.insert(wrapped.end(), in.command.begin(), in.command.end());
    in.command = std::move(wrapped);
    spec.seccomp_listener_channel = launch->manager_end.get();
  }
  spec.argv = bwrap_argv(p, in);
  spec.argv[0] = "bwrap";
  spec.program = host.bwrap;
  spec.pass_fds = pass;
  // Stubs exist before bwrap mounts on them, and go when the session does.
  auto stubs = acquire_stubs(p.stubs);
  if (!stubs) return std::move(stubs).error();
  launch->stubs = std::move(*stubs);
  spec.keep = std::move(launch);
  return {};
}

}  // namespace uexec::policy
