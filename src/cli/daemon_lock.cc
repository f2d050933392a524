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

constexpr auto kPollEvery = std::chrono::milliseconds(20);

// A POSIX record lock on the whole file (not flock: the kernel names a record lock's holder,
// so the pid we report or signal is the live holder's, never a stale one from the file).
bool try_lock(int fd) {
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  return ::fcntl(fd, F_SETLK, &fl) == 0;
}

// Who holds the lock: its pid; 0 when nobody does (any more); -1 when a process holds it
// whose pid this pid namespace cannot see (the kernel reports 0 for it).
pid_t holder_of(int fd) {
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  if (::fcntl(fd, F_GETLK, &fl) != 0 || fl.l_type == F_UNLCK) return 0;
  return fl.l_pid > 0 ? fl.l_pid : -1;
}

std::string who(pid_t holder) {
  return holder > 0 ? "pid " + std::to_string(holder) : "a process outside this pid namespace";
}

Result<void> write_pid(int fd) {
  std::string text = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()))
    return Error::sys("write the daemon's lock file");
  return {};
}

// SIGTERM, then SIGCONT so that a daemon stopped with Ctrl-Z acts on it.
Result<void> ask_to_exit(pid_t pid) {
  if (::kill(pid, SIGTERM) != 0) {
    if (errno == ESRCH) return {};
    return Error::sys("signal the daemon (" + who(pid) + ")");
  }
  ::kill(pid, SIGCONT);
  return {};
}

}  // namespace

Result<DaemonLock> DaemonLock::acquire(const std::string& socket_path, bool replace, std::chrono::milliseconds wait) {
  const std::string path = path_for(socket_path);
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return Error::sys("open " + path);
  pid_t holder = 0;
  while (!try_lock(fd.get())) {
    if (errno != EACCES && errno != EAGAIN) return Error::sys("lock " + path);
    holder = holder_of(fd.get());
    if (holder != 0) break;  // else: released between the two calls; try again
  }
  if (holder == 0) {
    if (auto r = write_pid(fd.get()); !r) return std::move(r).error();
    return DaemonLock(std::move(fd));
  }
  if (!replace)
    return Error{base::Errc::kLimit, 0,
                 "already running (" + who(holder) + ") on unix:" + socket_path +
                     "; `uexec stop` ends it, `uexec serve --replace` takes over"};
  if (holder < 0)
    return Error{base::Errc::kLimit, 0,
                 "the daemon on unix:" + socket_path + " runs in another pid namespace; stop it from there"};
  if (auto r = ask_to_exit(holder); !r) return std::move(r).error();
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (!try_lock(fd.get())) {
    if (errno != EACCES && errno != EAGAIN) return Error::sys("lock " + path);
    if (std::chrono::steady_clock::now() >= deadline)
      return Error{base::Errc::kLimit, 0,
                   "the running daemon (" + who(holder) + ") did not exit within " + std::to_string(wait.count()) +
                       " ms (it may have stopped listening already)"};
    std::this_thread::sleep_for(kPollEvery);
  }
  if (auto r = write_pid(fd.get()); !r) return std::move(r).error();
  return DaemonLock(std::move(fd));
}

pid_t DaemonLock::holder(const std::string& socket_path) {
  UniqueFd fd(::open(path_for(socket_path).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  return fd ? holder_of(fd.get()) : 0;
}

Result<pid_t> DaemonLock::stop(const std::string& socket_path, std::chrono::milliseconds wait) {
  const pid_t pid = holder(socket_path);
  if (pid == 0) return Error{base::Errc::kNotFound, 0, "no daemon runs on unix:" + socket_path};
  if (pid < 0)
    return Error{base::Errc::kLimit, 0,
                 "the daemon on unix:" + socket_path + " runs in another pid namespace; stop it from there"};
  if (auto r = ask_to_exit(pid); !r) return std::move(r).error();
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (holder(socket_path) != 0) {
    if (std::chrono::steady_clock::now() >= deadline)
      return Error{base::Errc::kLimit, 0,
                   "the daemon (" + who(pid) + ") did not exit within " + std::to_string(wait.count()) + " ms"};
    std::this_thread::sleep_for(kPollEvery);
  }
  return pid;
}

}  // namespace uexec::cli
