#include "pty/spawn.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace uexec::pty {

using base::Errc;
using base::Error;
using base::Result;
using base::UniqueFd;

namespace {

// Everything the child reads, and the two words it writes back on failure.
struct ChildArgs {
  const char* path;
  char* const* argv;
  char* const* envp;
  const char* cwd;  // nullptr: keep ours
  ChildStdio stdio;
  const ChildStep* steps;
  std::size_t nsteps;
  // Written by the child, read by the parent after clone returns (CLONE_VFORK orders it).
  int err_no;
  const char* failed_step;
};

// The child. Runs on its own stack in our address space until execve; touches only the
// ChildArgs and the kernel. No allocation, no locks, no logging, no C++ exceptions.
int child_main(void* raw) noexcept {
  auto* a = static_cast<ChildArgs*>(raw);
  auto fail = [a](const char* step) noexcept {
    a->err_no = errno;
    a->failed_step = step;
    _exit(127);
  };

  // Every signal is blocked (the parent did it before clone). Handlers would run the
  // parent's code on our stack, and ignored signals would stay ignored across execve, so
  // every disposition goes back to the default before anything is unblocked.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int s = 1; s < NSIG; ++s) {
    if (s == SIGKILL || s == SIGSTOP) continue;
    ::sigaction(s, &dfl, nullptr);  // glibc's reserved signals fail with EINVAL: harmless
  }

  if (::setsid() < 0) fail("setsid");
  if (a->stdio.tty >= 0) {
    // We are a session leader with no controlling tty, so the slave becomes ours.
    if (::ioctl(a->stdio.tty, TIOCSCTTY, 0) < 0) fail("ioctl TIOCSCTTY");
    for (int fd = 0; fd < 3; ++fd)
      if (::dup2(a->stdio.tty, fd) < 0) fail("dup2 pty slave");
  } else {
    if (::dup2(a->stdio.in, 0) < 0) fail("dup2 stdin");
    if (::dup2(a->stdio.out, 1) < 0) fail("dup2 stdout");
    if (::dup2(a->stdio.err, 2) < 0) fail("dup2 stderr");
  }
  // Only 0, 1 and 2 cross into the child, whatever the manager has open or leaks.
  if (::syscall(SYS_close_range, 3U, ~0U, 0U) < 0) {
    // Kernels before 5.9: close what the soft limit allows.
    long max = ::sysconf(_SC_OPEN_MAX);
    for (long fd = 3; fd < (max > 0 ? max : 1024); ++fd) ::close(static_cast<int>(fd));
  }
  if (a->cwd && ::chdir(a->cwd) < 0) fail("chdir");
  for (std::size_t i = 0; i < a->nsteps; ++i) {
    if (int err = a->steps[i].fn(a->steps[i].arg); err != 0) {
      errno = err;
      fail(a->steps[i].what);
    }
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(a->path, a->argv, a->envp);
  fail("execve");
  return 127;  // not reached
}

// One child stack per thread, made on first use and kept: the parent sleeps while the child
// runs, so one thread never has two children on it at once. A guard page sits below it.
class ChildStack {
 public:
  static constexpr std::size_t kSize = 64 * 1024;
  ChildStack() {
    long page = ::sysconf(_SC_PAGESIZE);
    guard_ = static_cast<std::size_t>(page > 0 ? page : 4096);
    void* p = ::mmap(nullptr, kSize + guard_, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (p == MAP_FAILED) return;
    ::mprotect(p, guard_, PROT_NONE);
    base_ = static_cast<char*>(p);
  }
  ~ChildStack() {
    if (base_) ::munmap(base_, kSize + guard_);
  }
  // The top of the stack (it grows down), or nullptr if mmap failed.
  void* top() const { return base_ ? base_ + guard_ + kSize : nullptr; }

 private:
  char* base_ = nullptr;
  std::size_t guard_ = 4096;
};

std::string env_value(const std::vector<std::string>& env, std::string_view name) {
  for (const auto& kv : env)
    if (kv.size() > name.size() && kv.compare(0, name.size(), name) == 0 && kv[name.size()] == '=')
      return kv.substr(name.size() + 1);
  return {};
}

bool has_env(const std::vector<std::string>& env, std::string_view name) {
  for (const auto& kv : env)
    if (kv.size() > name.size() && kv.compare(0, name.size(), name) == 0 && kv[name.size()] == '=')
      return true;
  return false;
}

}  // namespace

Result<std::string> resolve_program(const std::string& argv0, const std::vector<std::string>& env,
                                    const std::string& cwd) {
  if (argv0.empty()) return Error::invalid("argv[0] is empty");
  if (argv0.find('/') != std::string::npos) return argv0;
  std::string path;
  if (has_env(env, "PATH")) {
    path = env_value(env, "PATH");
  } else if (const char* own = std::getenv("PATH")) {
    path = own;
  } else {
    path = "/usr/local/bin:/usr/bin:/bin";
  }
  bool saw_unexecutable = false;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    start = end + 1;
    if (dir.empty()) dir = ".";  // POSIX: an empty entry is the current directory
    std::string candidate = dir + "/" + argv0;
    // A relative PATH entry is relative to the child's cwd, where execve will run.
    std::string probe = (candidate[0] != '/' && !cwd.empty()) ? cwd + "/" + candidate : candidate;
    struct stat st {};
    if (::stat(probe.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (::access(probe.c_str(), X_OK) == 0) return candidate;
    saw_unexecutable = true;
  }
  int err = saw_unexecutable ? EACCES : ENOENT;
  return Error{Errc::kExecFailed, err, "execve " + argv0 + " (looked up on PATH)"};
}

Result<Spawned> spawn(const SpawnSpec& spec, const ChildStdio& stdio) {
  if (spec.argv.empty()) return Error::invalid("spawn: argv is empty");
  if (stdio.tty < 0 && (stdio.in < 0 || stdio.out < 0 || stdio.err < 0))
    return Error::invalid("spawn: no stdio given");
  if ((stdio.tty >= 0 && stdio.tty <= 2) ||
      (stdio.tty < 0 && (stdio.in <= 2 || stdio.out <= 2 || stdio.err <= 2)))
    return Error::invalid("spawn: stdio fds must be above 2");
  auto path = resolve_program(spec.program.empty() ? spec.argv[0] : spec.program, spec.env, spec.cwd);
  if (!path) return std::move(path).error();

  // Flatten to char* arrays now: the child may not allocate.
  std::vector<char*> argv;
  argv.reserve(spec.argv.size() + 1);
  for (const auto& s : spec.argv) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  envp.reserve(spec.env.size() + 1);
  for (const auto& s : spec.env) envp.push_back(const_cast<char*>(s.c_str()));
  envp.push_back(nullptr);

  ChildArgs args{};
  args.path = path->c_str();
  args.argv = argv.data();
  args.envp = envp.data();
  args.cwd = spec.cwd.empty() ? nullptr : spec.cwd.c_str();
  args.stdio = stdio;
  args.steps = spec.steps.data();
  args.nsteps = spec.steps.size();

  static thread_local ChildStack stack;
  if (!stack.top()) return Error::sys("mmap child stack", ENOMEM);

  // Block every signal so that no handler of ours runs on the child's stack; the child
  // resets dispositions before it unblocks.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int pidfd = -1;
  int flags = CLONE_VM | CLONE_VFORK | SIGCHLD;
  pid_t pid = ::clone(child_main, stack.top(), flags | CLONE_PIDFD, &args, &pidfd);
  if (pid < 0 && errno == EINVAL) {
    pidfd = -1;  // kernels before 5.2: no CLONE_PIDFD; the reaper falls back to SIGCHLD
    pid = ::clone(child_main, stack.top(), flags, &args);
  }
  int clone_errno = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) return Error::sys("clone", clone_errno);

  UniqueFd owned_pidfd(pidfd);
  if (args.failed_step != nullptr) {
    // The child has already _exit'ed (CLONE_VFORK resumed us): reap it now.
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    std::string context = args.failed_step;
    if (std::strcmp(args.failed_step, "chdir") == 0) {
      context += " " + spec.cwd;
    } else if (std::strcmp(args.failed_step, "execve") == 0) {
      context += " " + *path;
    }
    return Error{Errc::kExecFailed, args.err_no, std::move(context)};
  }
  return Spawned{pid, std::move(owned_pidfd)};
}

}  // namespace uexec::pty
