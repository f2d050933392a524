#include "cli/daemon_lock.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <thread>

namespace uexec::cli {

using base::Error;
using base::Result;
using base::UniqueFd;

namespace {

// A POSIX record lock on the whole file (not flock: the kernel names a record lock's holder,
// so the pid we report or signal is the live holder's, never a stale one from the file).
bool try_lock(int fd) {
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  return ::fcntl(fd, F_SETLK, &fl) == 0;
}

// The pid holding the lock, or 0 when none does (any more).
pid_t holder_of(int fd) {
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  if (::fcntl(fd, F_GETLK, &fl) != 0 || fl.l_type == F_UNLCK) return 0;
  return fl.l_pid;
}

Result<void> write_pid(int fd) {
  std::string text = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()))
    return Error::sys("write the daemon's lock file");
  return {};
}

}  // namespace

Result<DaemonLock> DaemonLock::acquire(const std::string& socket_path, bool replace, std::chrono::milliseconds wait) {
  const std::string path = path_for(socket_path);
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return Error::sys("open " + path);
  if (try_lock(fd.get())) {
    if (auto r = write_pid(fd.get()); !r) return std::move(r).error();
    return DaemonLock(std::move(fd));
  }
  if (errno != EACCES && errno != EAGAIN) return Error::sys("lock " + path);
  const pid_t holder = holder_of(fd.get());
  const std::string who = holder > 0 ? "pid " + std::to_string(holder) : "another process";
  if (!replace)
    return Error{base::Errc::kLimit, 0,
                 "already running (" + who + ") on unix:" + socket_path +
                     "; `uexec stop` ends it, `uexec serve --replace` takes over"};
  if (holder > 0 && ::kill(holder, SIGTERM) != 0 && errno != ESRCH)
    return Error::sys("signal the running daemon (" + who + ")");
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (!try_lock(fd.get())) {
    if (errno != EACCES && errno != EAGAIN) return Error::sys("lock " + path);
    if (std::chrono::steady_clock::now() >= deadline)
      return Error{base::Errc::kLimit, 0,
                   "the running daemon (" + who + ") did not exit within " + std::to_string(wait.count()) + " ms"};
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (auto r = write_pid(fd.get()); !r) return std::move(r).error();
  return DaemonLock(std::move(fd));
}

}  // namespace uexec::cli
