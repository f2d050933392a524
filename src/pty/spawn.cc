#include "pty/spawn.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/close_range.h>
#include <linux/sched.h>

#include <cerrno>
// AddressSanitizer: gcc defines __SANITIZE_ADDRESS__, clang 14 only answers __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define UEXEC_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UEXEC_ASAN 1
#endif
#endif
#if defined(UEXEC_ASAN)
#include <sanitizer/asan_interface.h>
#endif
#include <cstdlib>
#include <cstring>

#include "base/fd_passing.h"

#if defined(__x86_64__)
// clone3 with CLONE_VM and a stack of our own: the child starts on that stack, so it cannot
// return into a C function's frame; this calls fn(arg) there and exits with its result
// (glibc exports no clone3 wrapper). Returns the child's pid, or -errno.
extern "C" long uexec_clone3_vm(void* args, unsigned long size, int (*fn)(void*), void* arg);
asm(R"(
  .text
  .globl uexec_clone3_vm
  .type uexec_clone3_vm, @function
uexec_clone3_vm:
  mov %rcx, %r8
  mov %rdx, %r9
  mov $435, %eax
  syscall
  test %rax, %rax
  jz 1f
  ret
1:
  xor %ebp, %ebp
  mov %r8, %rdi
  call *%r9
  mov %eax, %edi
  mov $60, %eax
  syscall
  hlt
  .size uexec_clone3_vm, .-uexec_clone3_vm
)");
#endif

namespace uexec::pty {

using base::Errc;
using base::Error;
using base::Result;
using base::UniqueFd;

namespace {

constexpr std::size_t kMaxPassFds = 8;

// Everything the child reads, and the words it writes back on failure.
struct ChildArgs {
  const char* path;
  char* const* argv;
  char* const* envp;
  const char* cwd;  // nullptr: keep ours
  ChildStdio stdio;
  const ChildStep* steps;
  std::size_t nsteps;
  const int* pass_fds;
  std::size_t npass;
  int cgroup_join;  // a cgroup directory to join in the child, or -1 (born in it, or none)
  const int* join_procs;  // cgroup.procs files to write "0" to (limits' v1 hierarchies)
  std::size_t njoin;      // pid 1 sets it to 0 once it joined them for the namespace
  // Supervised mode only: pid 1's part.
  const ChildStep* setup_steps;
  std::size_t nsetup;
  int init_fd;
  int status_fd;
  int channel;           // supervisor channel, or -1
  bool die_with_manager; // PR_SET_PDEATHSIG for pid 1
  void* command_stack;   // where pid 1 runs the command's process
  char pid_text[16];     // the command's pid, for init's argv
  char records_mode[4];  // init's argv[4]: "-", or "w" (file records) and "r" (setuid is evidence)
  // Written by a child, read by the parent after clone returns (CLONE_VFORK orders it).
  int err_no;
  const char* failed_step;
  const char* failed_detail;
};

[[noreturn]] void child_fail(ChildArgs* a, const char* step, const char* detail = nullptr) noexcept {
  a->err_no = errno;
  a->failed_step = step;
  a->failed_detail = detail;
  _exit(127);
}

// Every signal is blocked (the parent did it before clone). Handlers would run the parent's
// code on our stack, and ignored signals would stay ignored across execve, so every
// disposition goes back to the default before anything is unblocked.
void reset_dispositions() noexcept {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int s = 1; s < NSIG; ++s) {
    if (s == SIGKILL || s == SIGSTOP) continue;
    ::sigaction(s, &dfl, nullptr);  // glibc's reserved signals fail with EINVAL: harmless
  }
}

// Keeps CAP_SYS_ADMIN (late deny-read masks) and CAP_SYS_PTRACE (who still holds a masked
// file) of init's namespace across its execve: for any uid but 0 in the namespace execve
// clears every capability, unless it is ambient. The command was cloned before: it has none.
void keep_init_capabilities() noexcept {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (::syscall(SYS_capget, &hdr, data) != 0) return;
  const int caps[] = {CAP_SYS_ADMIN, CAP_SYS_PTRACE};
  for (int c : caps) data[c / 32].inheritable |= data[c / 32].permitted & (1U << (c % 32));
  hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  if (::syscall(SYS_capset, &hdr, data) != 0) return;
  for (int c : caps) ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, c, 0, 0);
}

void close_from(unsigned first, unsigned flags = 0) noexcept {
  if (::syscall(SYS_close_range, first, ~0U, flags) < 0 && flags == 0) {
    // Kernels before 5.9: close what the soft limit allows.
    long max = ::sysconf(_SC_OPEN_MAX);
    for (long fd = first; fd < (max > 0 ? max : 1024); ++fd) ::close(static_cast<int>(fd));
  }
}

int run_steps(ChildArgs* a, const ChildStep* steps, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    if (int err = steps[i].fn(steps[i].arg, a->stdio.tty); err != 0) {
      errno = err;
      child_fail(a, steps[i].what, steps[i].detail ? *steps[i].detail : nullptr);
    }
  }
  return 0;
}

// Moves the calling process into each cgroup whose cgroup.procs is open in `a` (limits).
void join_limit_cgroups(ChildArgs* a) noexcept {
  for (std::size_t i = 0; i < a->njoin; ++i)
    if (::write(a->join_procs[i], "0", 1) != 1) child_fail(a, "join the session's limit cgroups");
  a->njoin = 0;
}

// The command's process. Runs on its own stack in our address space until execve; touches
// only the ChildArgs and the kernel. No allocation, no locks, no logging, no C++ exceptions.
int child_main(void* raw) noexcept {
  auto* a = static_cast<ChildArgs*>(raw);
  reset_dispositions();
  if (::setsid() < 0) child_fail(a, "setsid");
  join_limit_cgroups(a);
  if (a->cgroup_join >= 0) {
    int procs = ::openat(a->cgroup_join, "cgroup.procs", O_WRONLY | O_CLOEXEC);
    if (procs < 0 || ::write(procs, "0", 1) != 1) child_fail(a, "join the session's cgroup");
    ::close(procs);
  }
  if (a->stdio.tty >= 0) {
    // We are a session leader with no controlling tty, so the slave becomes ours.
    if (::ioctl(a->stdio.tty, TIOCSCTTY, 0) < 0) child_fail(a, "ioctl TIOCSCTTY");
    for (int fd = 0; fd < 3; ++fd)
      if (::dup2(a->stdio.tty, fd) < 0) child_fail(a, "dup2 pty slave");
  } else {
    if (::dup2(a->stdio.in, 0) < 0) child_fail(a, "dup2 stdin");
    if (::dup2(a->stdio.out, 1) < 0) child_fail(a, "dup2 stdout");
    if (::dup2(a->stdio.err, 2) < 0) child_fail(a, "dup2 stderr");
  }
  if (a->cwd && ::chdir(a->cwd) < 0) child_fail(a, "chdir");
  // The policy's steps (privileges, Landlock, seccomp) may use fds the parent prepared, so
  // they run before everything above 2 is closed.
  run_steps(a, a->steps, a->nsteps);
  // Passed fds go to 3, 4, …: first out of that range, then into place.
  int moved[kMaxPassFds];
  for (std::size_t i = 0; i < a->npass; ++i) {
    moved[i] = ::fcntl(a->pass_fds[i], F_DUPFD, static_cast<int>(3 + a->npass));
    if (moved[i] < 0) child_fail(a, "dup passed fd");
  }
  for (std::size_t i = 0; i < a->npass; ++i)
    if (::dup2(moved[i], static_cast<int>(3 + i)) < 0) child_fail(a, "dup2 passed fd");
  // Only 0, 1, 2 (and the passed fds) cross into the child, whatever the manager has open.
  close_from(static_cast<unsigned>(3 + a->npass));
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(a->path, a->argv, a->envp);
  child_fail(a, "execve");
}

// pid 1 of a sandbox's namespaces (supervised mode): builds the view, starts the command as
// pid 2, then becomes init. Same rules as child_main: syscalls and ChildArgs only.
int pid1_main(void* raw) noexcept {
  auto* a = static_cast<ChildArgs*>(raw);
  reset_dispositions();
  if (::setsid() < 0) child_fail(a, "setsid");
  // The sandbox dies with the manager, unless a holder keeps it for the next one; init keeps
  // this across its execve.
  if (a->die_with_manager && ::prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) child_fail(a, "prctl PDEATHSIG");
  join_limit_cgroups(a);  // before anything forks: the command inherits them
  run_steps(a, a->setup_steps, a->nsetup);
  pid_t cmd = ::clone(child_main, a->command_stack, CLONE_VM | CLONE_VFORK | SIGCHLD, a);
  if (cmd < 0) child_fail(a, "clone command");
  if (a->failed_step) _exit(127);  // the command's process failed and is gone
  // Become init: the status pipe on 3, the seccomp listener on 4, the supervisor channel on 5,
  // /dev/null (of the view) on 0-2, nothing else open. Everything moves above 9 first, so
  // that no placement clobbers an fd still to be placed, whatever numbers they had.
  int init = ::fcntl(a->init_fd, F_DUPFD_CLOEXEC, 10);
  int status = ::fcntl(a->status_fd, F_DUPFD_CLOEXEC, 10);
  int channel = a->channel >= 0 ? ::fcntl(a->channel, F_DUPFD_CLOEXEC, 10) : -1;
  if (init < 0 || status < 0 || (a->channel >= 0 && channel < 0)) child_fail(a, "dup init fds");
  // The command's process sent us its seccomp listener (if it made one).
  int listener = -1;
  if (channel >= 0) {
    int fd = base::recv_fd(channel);
    if (fd >= 0) {
      listener = ::fcntl(fd, F_DUPFD_CLOEXEC, 10);
      ::close(fd);
    }
  }
  int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null < 0) child_fail(a, "open /dev/null");
  for (int fd = 0; fd < 3; ++fd)
    if (::dup2(null, fd) < 0) child_fail(a, "dup2 /dev/null");
  if (::dup2(status, 3) < 0) child_fail(a, "dup2 status");
  if (listener >= 0) {
    if (::dup2(listener, 4) < 0) child_fail(a, "dup2 listener");
  } else {
    ::close(4);
  }
  if (channel >= 0) {
    if (::dup2(channel, 5) < 0) child_fail(a, "dup2 channel");
  } else {
    ::close(5);
  }
  close_from(6, CLOSE_RANGE_CLOEXEC);
  bool control = channel >= 0;
  // itoa without allocation
  char digits[16];
  int n = 0;
  for (unsigned v = static_cast<unsigned>(cmd); n == 0 || v != 0; v /= 10) digits[n++] = static_cast<char>('0' + v % 10);
  for (int i = 0; i < n; ++i) a->pid_text[i] = digits[n - 1 - i];
  a->pid_text[n] = '\0';
  char name[] = "uexec-init";
  char listener_fd[] = "4", control_fd[] = "5", dash[] = "-";
  char* init_argv[] = {name, a->pid_text, listener >= 0 ? listener_fd : dash, control ? control_fd : dash,
                       a->records_mode, nullptr};
  char* init_envp[] = {nullptr};
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (control) keep_init_capabilities();
  ::syscall(SYS_execveat, init, "", init_argv, init_envp, AT_EMPTY_PATH);
  int err = errno;
  ::kill(cmd, SIGKILL);
  errno = err;
  child_fail(a, "execveat uexec-init");
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
  void* bottom() const { return base_ ? base_ + guard_ : nullptr; }
  // A child that exec'd never left its scopes, so AddressSanitizer's shadow of this stack
  // still marks them; the next child on it must start from clean shadow.
  void reset_shadow() const noexcept {
#if defined(UEXEC_ASAN)
    if (base_) __asan_unpoison_memory_region(base_ + guard_, kSize);
#endif
  }

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
  // execve and chdir would cut these strings at the NUL and run something else (rpc/c_strings.h).
  auto has_nul = [](const std::string& s) { return s.find('\0') != std::string::npos; };
  for (std::size_t i = 0; i < spec.argv.size(); ++i)
    if (has_nul(spec.argv[i])) return Error::invalid("spawn: argv[" + std::to_string(i) + "] holds a NUL byte");
  for (const auto& kv : spec.env)
    if (has_nul(kv)) return Error::invalid("spawn: an environment entry holds a NUL byte");
  if (has_nul(spec.cwd) || has_nul(spec.program)) return Error::invalid("spawn: the cwd or program holds a NUL byte");
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
  if (spec.pass_fds.size() > kMaxPassFds) return Error::invalid("spawn: too many fds to pass");
  args.pass_fds = spec.pass_fds.data();
  args.npass = spec.pass_fds.size();
  args.channel = -1;
  args.die_with_manager = spec.die_with_manager;
  const bool supervised = spec.ns_flags != 0;
  args.cgroup_join = supervised ? -1 : spec.cgroup_fd;
  args.join_procs = spec.join_cgroups.data();
  args.njoin = spec.join_cgroups.size();
  UniqueFd status_read, status_write;
  if (supervised) {
    if (spec.init_fd < 0) return Error::invalid("spawn: namespaces need an init program");
    int p[2];
    if (::pipe2(p, O_CLOEXEC) < 0) return Error::sys("pipe2 status");
    status_read.reset(p[0]);
    status_write.reset(p[1]);
    args.setup_steps = spec.setup_steps.data();
    args.nsetup = spec.setup_steps.size();
    args.init_fd = spec.init_fd;
    args.status_fd = status_write.get();
    args.channel = spec.supervisor_channel;
    std::string mode = spec.file_records && spec.file_records->by_mounts
                           ? std::string("w") + (spec.file_records->setid_evidence ? "r" : "")
                           : std::string("-");
    std::memcpy(args.records_mode, mode.c_str(), mode.size() + 1);
  }

  static thread_local ChildStack stack;
  if (!stack.top()) return Error::sys("mmap child stack", ENOMEM);
  stack.reset_shadow();
  if (supervised) {
    static thread_local ChildStack command_stack;
    if (!command_stack.top()) return Error::sys("mmap child stack", ENOMEM);
    command_stack.reset_shadow();
    args.command_stack = command_stack.top();
  }

  // Block every signal so that no handler of ours runs on the child's stack; the child
  // resets dispositions before it unblocks.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int pidfd = -1;
  int flags = CLONE_VM | CLONE_VFORK | SIGCHLD | static_cast<int>(spec.ns_flags);
  int (*entry)(void*) = supervised ? pid1_main : child_main;
  pid_t pid = -1;
  bool cloned = false;
#if defined(__x86_64__) && defined(CLONE_INTO_CGROUP)
  if (args.cgroup_join >= 0) {
    // Born in its cgroup: no migration (which takes the cgroup rwsem for writing, ~80 us).
    clone_args ca{};
    ca.flags = CLONE_VM | CLONE_VFORK | CLONE_PIDFD | CLONE_INTO_CGROUP;
    ca.pidfd = reinterpret_cast<std::uint64_t>(&pidfd);
    ca.exit_signal = SIGCHLD;
    ca.stack = reinterpret_cast<std::uint64_t>(stack.bottom());
    ca.stack_size = ChildStack::kSize;
    ca.cgroup = static_cast<std::uint64_t>(args.cgroup_join);
    const int join = args.cgroup_join;
    args.cgroup_join = -1;
    long rc = uexec_clone3_vm(&ca, sizeof ca, child_main, &args);
    if (rc >= 0) {
      pid = static_cast<pid_t>(rc);
      cloned = true;
    } else {
      args.cgroup_join = join;  // no clone3 here (or it refused): the child joins instead
      pidfd = -1;
    }
  }
#endif
  if (!cloned) pid = ::clone(entry, stack.top(), flags | CLONE_PIDFD, &args, &pidfd);
  if (pid < 0 && errno == EINVAL && !supervised) {
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
    if (args.failed_detail) {
      context += " ";
      context += args.failed_detail;
    } else if (std::strcmp(args.failed_step, "chdir") == 0) {
      context += " " + spec.cwd;
    } else if (std::strcmp(args.failed_step, "execve") == 0) {
      context += " " + *path;
    }
    return Error{Errc::kExecFailed, args.err_no, std::move(context)};
  }
  return Spawned{pid, std::move(owned_pidfd), std::move(status_read)};
}

}  // namespace uexec::pty
