// sandbox-probe: one attempted operation per run, for the security acceptance table
// (tests/sandbox/acceptance.tsv, docs/sandbox.md §7).
//
//   sandbox-probe NAME [ARG...]
//
// Prints "allow" and exits 0 when the operation succeeded, or "deny ERRNAME: <strerror>" and
// exits 1 when it failed (the C library's text, so that the denial predicate sees what a
// real program would print). Probes that the kernel answers by killing the process (foreign
// ABIs under seccomp) never print. Exit 2: bad usage.
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace {

const char* errno_name(int e) {
  switch (e) {
    case EPERM: return "EPERM";
    case EACCES: return "EACCES";
    case EROFS: return "EROFS";
    case EBUSY: return "EBUSY";
    case EXDEV: return "EXDEV";
    case ENOSYS: return "ENOSYS";
    case ESRCH: return "ESRCH";
    case ENOENT: return "ENOENT";
    case EBADF: return "EBADF";
    case EEXIST: return "EEXIST";
    case ECONNREFUSED: return "ECONNREFUSED";
    case ENETUNREACH: return "ENETUNREACH";
    case EAFNOSUPPORT: return "EAFNOSUPPORT";
    case EINVAL: return "EINVAL";
    case ENOTDIR: return "ENOTDIR";
    case EISDIR: return "EISDIR";
    default: return "E?";
  }
}

// The result of one probe: 0 = allowed, else the errno it failed with.
using Probe = std::function<int(const std::vector<std::string>&)>;

int ok_or_errno(long rc) { return rc < 0 ? errno : 0; }

int write_file(const std::string& path, int flags = O_WRONLY | O_CREAT | O_TRUNC) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  int err = ::write(fd, "x\n", 2) < 0 ? errno : 0;
  ::close(fd);
  return err;
}

int connect_tcp(int port) {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return errno;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int err = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0 ? errno : 0;
  ::close(s);
  return err;
}

int connect_unix(const std::string& path, bool abstract) {
  int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return errno;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  socklen_t len;
  if (abstract) {
    a.sun_path[0] = '\0';
    std::memcpy(a.sun_path + 1, path.data(), std::min(path.size(), sizeof a.sun_path - 2));
    len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + path.size());
  } else {
    std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
    len = sizeof a;
  }
  int err = ::connect(s, reinterpret_cast<sockaddr*>(&a), len) < 0 ? errno : 0;
  ::close(s);
  return err;
}

// A child that waits to be traced or read; returns its pid.
pid_t idle_child() {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::pause();
    _exit(0);
  }
  return pid;
}

void end_child(pid_t pid) {
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

std::map<std::string, Probe> probes() {
  std::map<std::string, Probe> p;
  // args[0] is the probe's argument where it needs one.
  p["write"] = [](auto& a) { return write_file(a.at(0)); };
  p["append"] = [](auto& a) { return write_file(a.at(0), O_WRONLY | O_APPEND); };
  p["read"] = [](auto& a) {
    int fd = ::open(a.at(0).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno;
    char b[16];
    int err = ::read(fd, b, sizeof b) < 0 ? errno : 0;
    ::close(fd);
    return err;
  };
  p["read_late"] = [](auto& a) {
    // Says it is waiting (one stderr line, for the host's cue), waits (up to 5 s) for the host
    // to create the file, gives the sandbox its 100 ms to mask it, then reads it.
    std::fputs("waiting\n", stderr);
    struct stat st {};
    for (int i = 0; i < 500 && ::stat(a.at(0).c_str(), &st) != 0; ++i) ::usleep(10000);
    ::usleep(100000);
    int fd = ::open(a.at(0).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno;
    char b[16];
    int err = ::read(fd, b, sizeof b) < 0 ? errno : 0;
    ::close(fd);
    return err;
  };
  p["create_in"] = [](auto& a) {  // mkdir DIR (it may exist), then create DIR/NAME
    if (::mkdir(a.at(0).c_str(), 0755) < 0 && errno != EEXIST) return errno;
    return write_file(a.at(0) + "/" + a.at(1));
  };
  p["mkdir"] = [](auto& a) { return ok_or_errno(::mkdir(a.at(0).c_str(), 0755)); };
  p["rename"] = [](auto& a) { return ok_or_errno(::rename(a.at(0).c_str(), a.at(1).c_str())); };
  p["tcp_connect"] = [](auto& a) { return connect_tcp(std::atoi(a.at(0).c_str())); };
  p["tcp_listen"] = [](auto&) {
    int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) return errno;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int err = (::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0 || ::listen(s, 1) < 0) ? errno : 0;
    ::close(s);
    return err;
  };
  p["udp_send"] = [](auto& a) {
    int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0) return errno;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(std::atoi(a.at(0).c_str())));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int err = ::sendto(s, "q", 1, 0, reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0 ? errno : 0;
    ::close(s);
    return err;
  };
  p["netlink_route"] = [](auto&) {
    int s = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (s < 0) return errno;
    ::close(s);
    return 0;
  };
  p["netlink_other"] = [](auto&) {
    int s = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_KOBJECT_UEVENT);
    if (s < 0) return errno;
    ::close(s);
    return 0;
  };
  p["unix_abstract"] = [](auto& a) { return connect_unix(a.at(0), true); };
  p["unix_path"] = [](auto& a) { return connect_unix(a.at(0), false); };
  p["io_uring"] = [](auto&) {
    io_uring_params params{};
    long fd = ::syscall(SYS_io_uring_setup, 4, &params);
    if (fd < 0) return errno;
    ::close(static_cast<int>(fd));
    return 0;
  };
  p["ptrace_child"] = [](auto&) {
    pid_t c = idle_child();
    int err = ok_or_errno(::ptrace(PTRACE_ATTACH, c, nullptr, nullptr));
    end_child(c);
    return err;
  };
  p["process_vm_readv"] = [](auto&) {
    pid_t c = idle_child();
    static int value = 42;
    int out = 0;
    iovec local{&out, sizeof out}, remote{&value, sizeof value};
    int err = ok_or_errno(::process_vm_readv(c, &local, 1, &remote, 1, 0));
    end_child(c);
    return err;
  };
  p["kill0"] = [](auto& a) { return ok_or_errno(::kill(std::atoi(a.at(0).c_str()), 0)); };
  p["proc_pid"] = [](auto& a) {
    struct stat st {};
    return ok_or_errno(::stat(("/proc/" + a.at(0)).c_str(), &st));
  };
  p["mount_tmpfs"] = [](auto& a) { return ok_or_errno(::mount("tmpfs", a.at(0).c_str(), "tmpfs", 0, nullptr)); };
  p["unshare_user"] = [](auto&) {
    pid_t c = ::fork();  // unshare in a child: the probe itself stays as it was
    if (c == 0) _exit(::unshare(CLONE_NEWUSER) < 0 ? errno : 0);
    int st = 0;
    ::waitpid(c, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : EINVAL;
  };
  p["setuid_file"] = [](auto& a) {
    int err = write_file(a.at(0));
    if (err) return err;
    err = ok_or_errno(::chmod(a.at(0).c_str(), 04755));
    ::unlink(a.at(0).c_str());
    return err;
  };
  p["setuid_tmpfile"] = [](auto& a) {
    // A nameless file made with the setuid bit (O_TMPFILE takes a mode), then linked in.
    const std::string& path = a.at(0);
    std::string dir = path.substr(0, path.rfind('/'));
    int fd = static_cast<int>(::open(dir.c_str(), O_TMPFILE | O_WRONLY, 04755));
    if (fd < 0) return errno;
    int err = ok_or_errno(::linkat(fd, "", AT_FDCWD, path.c_str(), AT_EMPTY_PATH));
    ::close(fd);
    if (err) return err;
    struct stat st {};
    bool setuid = ::stat(path.c_str(), &st) == 0 && (st.st_mode & S_ISUID);
    ::unlink(path.c_str());
    return setuid ? 0 : ENOTSUP;  // made, but without the bit: not what this probe asks
  };
  p["no_new_privs"] = [](auto&) {
    // "setuid binary effective inside": allowed only when no_new_privs is off.
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line))
      if (line.rfind("NoNewPrivs:", 0) == 0) return line.find('1') != std::string::npos ? EPERM : 0;
    return 0;
  };
  p["mknod"] = [](auto& a) {
    int err = ok_or_errno(::mknod(a.at(0).c_str(), S_IFCHR | 0600, makedev(1, 3)));
    if (err == 0) ::unlink(a.at(0).c_str());
    return err;
  };
  p["open_by_handle_at"] = [](auto&) {
    alignas(file_handle) unsigned char storage[sizeof(file_handle) + 128] = {};
    auto* fh = reinterpret_cast<file_handle*>(storage);
    fh->handle_bytes = 128;
    int mount_id = 0;
    if (::name_to_handle_at(AT_FDCWD, "/", fh, &mount_id, 0) < 0) return errno;
    int fd = ::open_by_handle_at(AT_FDCWD, fh, O_RDONLY);
    if (fd < 0) return errno;
    ::close(fd);
    return 0;
  };
  p["write_fd"] = [](auto& a) { return ok_or_errno(::write(std::atoi(a.at(0).c_str()), "x", 1)); };
  p["tiocsti"] = [](auto&) {
    char c = ' ';
    int err = ok_or_errno(::ioctl(0, TIOCSTI, &c));
    if (err == 0) {  // take the injected byte back out of our own input
      tcflush(0, TCIFLUSH);
    }
    return err;
  };
  p["tioclinux"] = [](auto&) {
    char sub = 6;  // TIOCL_GETSHIFTSTATE: harmless where it is allowed
    return ok_or_errno(::ioctl(0, TIOCLINUX, &sub));
  };
  p["x32"] = [](auto&) { return ok_or_errno(::syscall(0x40000000 | SYS_getpid)); };
  p["i386"] = [](auto&) {
    long ret;
    // getpid (20) through the 32-bit entry point.
    asm volatile("int $0x80" : "=a"(ret) : "a"(20) : "memory");
    return ret < 0 ? static_cast<int>(-ret) : 0;
  };
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  auto table = probes();
  if (argc < 2 || !table.count(argv[1])) {
    std::fprintf(stderr, "usage: sandbox-probe NAME [ARG...]; names:");
    for (const auto& [name, _] : table) std::fprintf(stderr, " %s", name.c_str());
    std::fprintf(stderr, "\n");
    return 2;
  }
  std::vector<std::string> args(argv + 2, argv + argc);
  int err;
  try {
    err = table[argv[1]](args);
  } catch (const std::out_of_range&) {
    std::fprintf(stderr, "sandbox-probe %s: missing argument\n", argv[1]);
    return 2;
  }
  if (err == 0) {
    std::printf("allow\n");
    return 0;
  }
  std::printf("deny %s: %s\n", errno_name(err), std::strerror(err));
  return 1;
}
