#include "session/owner_lifeline.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <unordered_set>

extern char** environ;

namespace uexec::session {

using base::Error;
using base::Result;
using base::UniqueFd;

namespace {

// One record on the socket (SOCK_SEQPACKET keeps each whole).
struct Record {
  char op;  // 'S' started, 'E' ended, 'D' disarm
  char pad[3];
  std::int32_t pgid;
};
static_assert(sizeof(Record) == 8);

// More groups than any owner runs at once; past it a start is not listed (and not reached).
constexpr std::size_t kMaxGroups = 1u << 20;

}  // namespace

Result<std::unique_ptr<OwnerLifeline>> OwnerLifeline::start(const std::string& self_exe) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) return Error::sys("lifeline socketpair");
  UniqueFd ours(sv[0]), pair_end(sv[1]);
  // Above 3, so that the spawn's dup2 to 3 is a real one (and clears FD_CLOEXEC).
  UniqueFd theirs(::fcntl(pair_end.get(), F_DUPFD_CLOEXEC, 10));
  if (!theirs) return Error::sys("lifeline dup");
  if (::fcntl(ours.get(), F_SETFL, O_NONBLOCK) < 0) return Error::sys("lifeline O_NONBLOCK");
  ::shutdown(theirs.get(), SHUT_WR);  // the watcher only reads
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_adddup2(&fa, theirs.get(), 3);
  for (int fd = 0; fd < 3; ++fd) posix_spawn_file_actions_addopen(&fa, fd, "/dev/null", O_RDWR, 0);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  // Its own session: a signal to the owner's process group (Ctrl-C in a terminal, an agent
  // CLI ending its MCP server's group) does not reach it.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSID);
  std::string arg0 = self_exe, arg1 = "lifeline";
  char* argv[] = {arg0.data(), arg1.data(), nullptr};
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, self_exe.c_str(), &fa, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return Error::sys("start the lifeline watcher " + self_exe, rc);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return Error{base::Errc::kSystem, 0, "the lifeline watcher did not start (" + self_exe + " lifeline)"};
  return std::unique_ptr<OwnerLifeline>(new OwnerLifeline(std::move(ours)));
}

OwnerLifeline::~OwnerLifeline() {
  // A lost disarm would have the watcher signal what we already ended: wait a little for room.
  pollfd p{socket_.get(), POLLOUT, 0};
  (void)::poll(&p, 1, 500);
  send('D', 0);
}

void OwnerLifeline::started(pid_t pgid) noexcept {
  if (pgid > 1) send('S', pgid);
}

void OwnerLifeline::ended(pid_t pgid) noexcept {
  if (pgid > 1) send('E', pgid);
}

void OwnerLifeline::send(char op, pid_t pgid) noexcept {
  Record r{op, {}, static_cast<std::int32_t>(pgid)};
  // Non-blocking, no SIGPIPE: a watcher that is gone or stopped never stalls the loop.
  (void)::send(socket_.get(), &r, sizeof r, MSG_NOSIGNAL | MSG_DONTWAIT);
}

// ---- the watcher ---------------------------------------------------------------------------------

namespace {

// SIGTERM (and SIGCONT, for a stopped group) to each group, up to kLifelineGrace for them to
// go, then SIGKILL to what is left.
void end_groups(std::unordered_set<pid_t>& groups) {
  for (auto it = groups.begin(); it != groups.end();) {
    if (*it > 1 && ::kill(-*it, SIGTERM) == 0) {
      (void)::kill(-*it, SIGCONT);
      ++it;
    } else {
      it = groups.erase(it);
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + kLifelineGrace;
  while (!groups.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
    for (auto it = groups.begin(); it != groups.end();) it = ::kill(-*it, 0) == 0 ? std::next(it) : groups.erase(it);
  }
  for (pid_t g : groups)
    if (g > 1) (void)::kill(-g, SIGKILL);
}

}  // namespace

int run_lifeline_watcher(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode)) {
    std::fputs("uexec lifeline: ends an owner's sessions when it dies; started by `uexec mcp` and `uexec "
               "exec-server`, not for direct use\n",
               stderr);
    return 2;
  }
  // Nothing of the owner's but the socket: fds it inherited without FD_CLOEXEC stay with it.
  // (`fd` is 3, after 0-2: everything above it goes.)
  if (::syscall(SYS_close_range, static_cast<unsigned>(fd + 1), ~0U, 0) < 0)
    for (int other = fd + 1; other < 1024; ++other) ::close(other);  // a kernel before 5.9
  // Away from the process that started us, so that we are never the owner's zombie.
  pid_t child = ::fork();
  if (child < 0) return 1;
  if (child > 0) _exit(0);
  ::signal(SIGHUP, SIG_IGN);
  ::signal(SIGINT, SIG_IGN);
  ::signal(SIGPIPE, SIG_IGN);
  ::prctl(PR_SET_NAME, "uexec-lifeline", 0, 0, 0);
  std::unordered_set<pid_t> groups;
  for (;;) {
    Record r{};
    ssize_t n = ::recv(fd, &r, sizeof r, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF (or an error): the owner is gone without disarming
    if (n != static_cast<ssize_t>(sizeof r)) continue;
    if (r.op == 'D') return 0;
    if (r.pgid <= 1) continue;
    if (r.op == 'S' && groups.size() < kMaxGroups) groups.insert(r.pgid);
    if (r.op == 'E') groups.erase(r.pgid);
  }
  end_groups(groups);
  return 0;
}

}  // namespace uexec::session
