#include "pty/tty_state.h"

#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>

namespace uexec::pty {

std::optional<TtyModes> tty_modes(int master_fd) noexcept {
  termios t{};
  if (master_fd < 0 || ::tcgetattr(master_fd, &t) != 0) return std::nullopt;
  return TtyModes{(t.c_lflag & ECHO) != 0, (t.c_lflag & ICANON) != 0, (t.c_lflag & ISIG) != 0};
}

dev_t slave_rdev(int master_fd) noexcept {
  char name[128];
  if (master_fd < 0 || ::ptsname_r(master_fd, name, sizeof name) != 0) return 0;
  struct stat st {};
  if (::stat(name, &st) != 0) return 0;
  return st.st_rdev;
}

namespace {

// Reads a small /proc file into `buf`; returns its length or -1.
ssize_t read_small(const std::string& path, char* buf, std::size_t cap) {
  FILE* f = std::fopen(path.c_str(), "re");
  if (!f) return -1;
  std::size_t n = std::fread(buf, 1, cap - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  return static_cast<ssize_t>(n);
}

// Syscalls a process sleeps in while it waits for input: read/readv name the fd; the
// multiplexers (readline uses pselect, event loops use poll/epoll) do not, so for those
// the process's fd 0 stands for what it waits on.
bool waiting_syscall(long nr, unsigned long arg0, int* fd) {
  switch (nr) {
    case SYS_read:
    case SYS_readv:
      *fd = static_cast<int>(arg0);
      return true;
    case SYS_select:
    case SYS_pselect6:
    case SYS_poll:
    case SYS_ppoll:
    case SYS_epoll_wait:
    case SYS_epoll_pwait:
      *fd = 0;
      return true;
    default:
      return false;
  }
}

// Whether process `pid` (named by its /proc directory) is in `pgrp`, sleeping in a read or a
// wait for input on an fd that fd_matches accepts.
bool process_waits(const std::string& pid_dir, pid_t pgrp, const std::function<bool(pid_t, int)>& fd_matches) {
  char buf[512];
  std::string base = "/proc/" + pid_dir;
  if (read_small(base + "/stat", buf, sizeof buf) <= 0) return false;
  // Fields after "(comm)": state ppid pgrp ...
  const char* rp = std::strrchr(buf, ')');
  if (!rp) return false;
  char state = 0;
  long ppid = 0, pg = 0;
  if (std::sscanf(rp + 1, " %c %ld %ld", &state, &ppid, &pg) != 3) return false;
  if (pg != pgrp || state != 'S') return false;
  if (read_small(base + "/syscall", buf, sizeof buf) <= 0) return false;
  long nr = -1;
  unsigned long arg0 = 0;
  if (std::sscanf(buf, "%ld 0x%lx", &nr, &arg0) < 1) return false;
  int fd = -1;
  if (!waiting_syscall(nr, arg0, &fd)) return false;
  return fd_matches(static_cast<pid_t>(std::atol(pid_dir.c_str())), fd);
}

// For each process of `pgrp` sleeping in a read or a wait for input, calls fd_matches(pid, fd).
// The group's leader is asked first: it is the reader in the common case (a shell, `read`,
// a REPL), and that spares a walk over all of /proc.
bool any_reader(pid_t pgrp, const std::function<bool(pid_t, int)>& fd_matches) {
  if (process_waits(std::to_string(pgrp), pgrp, fd_matches)) return true;
  DIR* d = ::opendir("/proc");
  if (!d) return false;
  bool found = false;
  while (!found) {
    dirent* e = ::readdir(d);
    if (!e) break;
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    if (std::atol(e->d_name) == pgrp) continue;  // asked already
    found = process_waits(e->d_name, pgrp, fd_matches);
  }
  ::closedir(d);
  return found;
}

}  // namespace

bool group_reading_tty(pid_t pgrp, dev_t rdev) {
  if (pgrp <= 0 || rdev == 0) return false;
  return any_reader(pgrp, [rdev](pid_t pid, int fd) {
    struct stat st {};
    std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
    return ::stat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == rdev;
  });
}

bool group_reading_pipe(pid_t pgrp, ino_t pipe_ino) {
  if (pgrp <= 0 || pipe_ino == 0) return false;
  return any_reader(pgrp, [pipe_ino](pid_t pid, int fd) {
    struct stat st {};
    std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
    return ::stat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode) && st.st_ino == pipe_ino;
  });
}

}  // namespace uexec::pty
