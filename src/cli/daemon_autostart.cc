#include "cli/daemon_autostart.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "base/self_exe.h"
#include "base/unique_fd.h"
#include "cli/daemon_lock.h"
#include "rpc/unix_server.h"

namespace uexec::cli {

using base::Error;
using base::Result;

namespace {

bool accepts(const std::string& socket_path) {
  base::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof addr.sun_path) return false;
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  return ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
}

// The last `n` lines of `path`, indented, for an error message.
std::string tail_of(const std::string& path, std::size_t n) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
    if (lines.size() > n) lines.erase(lines.begin());
  }
  std::string out;
  for (const auto& l : lines) out += "\n  " + l;
  return out;
}

std::vector<std::string> split_words(const char* text) {
  std::vector<std::string> words;
  std::istringstream in(text ? text : "");
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

}  // namespace

Result<pid_t> ensure_daemon(const std::string& socket) {
  std::string socket_path = socket;
  if (!socket_path.empty() && socket_path.front() != '/') {
    char cwd[4096];
    if (!::getcwd(cwd, sizeof cwd)) return Error::sys("getcwd");
    socket_path = std::string(cwd) + "/" + socket_path;
  }
  const char* off = std::getenv("UEXEC_AUTOSTART");
  if ((off && std::strcmp(off, "0") == 0) || DaemonLock::holder(socket_path) != 0) return 0;
  if (auto r = rpc::prepare_socket_dir(rpc::socket_dir_of(socket_path)); !r) return std::move(r).error();
  std::string self = base::self_exe();
  if (self.empty()) return Error::sys("readlink /proc/self/exe");
  std::vector<std::string> args = {self, "serve", "--socket", socket_path};
  for (auto& w : split_words(std::getenv("UEXEC_AUTOSTART_ARGS"))) args.push_back(std::move(w));
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string log = autostart_log_path(socket_path);
  base::UniqueFd log_fd(::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!log_fd) return Error::sys("open " + log);
  base::UniqueFd null_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!null_fd) return Error::sys("open /dev/null");
  pid_t pid = ::fork();
  if (pid < 0) return Error::sys("fork");
  if (pid == 0) {
    // The daemon's own session and process group: no terminal, no job control of ours.
    ::setsid();
    if (::chdir("/") != 0) _exit(127);  // holds no directory of the client's busy
    ::dup2(null_fd.get(), 0);
    ::dup2(log_fd.get(), 1);
    ::dup2(log_fd.get(), 2);
    ::execv(self.c_str(), argv.data());
    _exit(127);
  }
  // Wait until it accepts, or until it has exited (then it said why in its log).
  const auto deadline = std::chrono::steady_clock::now() + kAutostartWait;
  while (std::chrono::steady_clock::now() < deadline) {
    if (accepts(socket_path)) return pid;
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid)
      return Error{base::Errc::kLimit, 0, "could not start the daemon (`uexec serve` exited " +
                                             std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)) +
                                             "); its log, " + log + ":" + tail_of(log, 5)};
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return Error{base::Errc::kLimit, 0, "the daemon started (pid " + std::to_string(pid) + ") but did not accept on " +
                                          socket_path + " within " + std::to_string(kAutostartWait.count()) + " s; its log: " + log};
}

}  // namespace uexec::cli
