// zyg.c: does a pre-filtered "zygote" make a Landlock+seccomp spawn cheap?
//   A  unsandboxed: manager clone(CLONE_VM|CLONE_VFORK)+execve
//   B  today's uexec way: vfork-clone child does NNP, capbset drop x41, capset, Landlock
//      restrict_self (ruleset built in the manager), seccomp load, execve
//   C  zygote: zygote (exec'd once from the manager) did NNP + capbset + seccomp once;
//      per spawn: request over SOCK_SEQPACKET with SCM_RIGHTS (stdio + ruleset fd),
//      zygote clone(CLONE_PARENT|CLONE_VM|CLONE_VFORK|CLONE_PIDFD), child: setsid, TIOCSCTTY,
//      dup2, Landlock restrict_self, capset, execve; reply pid (+pidfd by SCM_RIGHTS).
//   D  as C but the zygote clones fork-style (CLONE_PARENT|CLONE_PIDFD, no CLONE_VM/VFORK)
//   E/J  unfiltered zygote, no sandbox steps (mechanics only); J = async (manager reads output
//        before the reply, as an event loop would); I = C async; K = early reply (CLONE_VM without
//        VFORK, reply before exec, exec completion via CLONE_CHILD_CLEARTID futex, 2nd status msg);
//   L  filtered zygote, no Landlock, async; M = I with one cached ruleset (no per-spawn build)
//   F/G/H  inline single steps: Landlock only, seccomp only, NNP+caps only
//   --checks: notify zygote + PTY + ./probe (SIGCHLD, pidfd, TIOCSCTTY, listener EBUSY, clone3,
//             exit_signal inheritance)
// Build: gcc -O2 -Wall -o zyg zygote_spawn.c -lseccomp && gcc -O2 -o zygote_probe zygote_probe.c
// (an experiment for docs/benchmarks.md, "S3: what a zygote would buy"; not built by meson)
// Run:   ./zyg [--rounds R] [--runs N] [--pty] [--heap MiB] [--variants ABCD]
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <stddef.h>
#include <time.h>
#include <unistd.h>

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
static void die(const char* what) { perror(what); exit(1); }

// ---------------------------------------------------------------- seccomp (uexec's rules)
static struct sock_fprog g_prog;
static int g_insns;

static void add(scmp_filter_ctx c, uint32_t act, int nr, unsigned n, const struct scmp_arg_cmp* a) {
  if (nr < 0) return;
  int rc = seccomp_rule_add_array(c, act, nr, n, a);
  if (rc < 0) { errno = -rc; die("seccomp_rule_add"); }
}
#define R0(act, nr) add(c, act, nr, 0, NULL)
#define R1(act, nr, a0) do { struct scmp_arg_cmp x_[] = {a0}; add(c, act, nr, 1, x_); } while (0)
#define R2(act, nr, a0, a1) do { struct scmp_arg_cmp x_[] = {a0, a1}; add(c, act, nr, 2, x_); } while (0)

// uexec compile(network=false, root=true, notify=<notify>, deny_unix=true)
static void build_bpf(int notify) {
  scmp_filter_ctx c = seccomp_init(SCMP_ACT_ALLOW);
  seccomp_attr_set(c, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  seccomp_attr_set(c, SCMP_FLTATR_CTL_OPTIMIZE, 2);
  uint32_t eperm = notify ? SCMP_ACT_NOTIFY : SCMP_ACT_ERRNO(EPERM), enosys = SCMP_ACT_ERRNO(ENOSYS);
  R0(enosys, SCMP_SYS(io_uring_setup)); R0(enosys, SCMP_SYS(io_uring_enter));
  R0(enosys, SCMP_SYS(io_uring_register)); R0(enosys, SCMP_SYS(clone3));
  unsigned long long bits[] = {CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
                               CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, 0x80};
  for (int i = 0; i < 8; i++) {
    R1(eperm, SCMP_SYS(unshare), SCMP_A0(SCMP_CMP_MASKED_EQ, bits[i], bits[i]));
    if (bits[i] != 0x80) R1(eperm, SCMP_SYS(clone), SCMP_A0(SCMP_CMP_MASKED_EQ, bits[i], bits[i]));
  }
  int deny[] = {SCMP_SYS(setns), SCMP_SYS(ptrace), SCMP_SYS(process_vm_readv),
                SCMP_SYS(process_vm_writev), SCMP_SYS(mount), SCMP_SYS(umount2),
                SCMP_SYS(pivot_root), SCMP_SYS(open_tree), SCMP_SYS(move_mount), SCMP_SYS(fsopen),
                SCMP_SYS(fsconfig), SCMP_SYS(fsmount), SCMP_SYS(fspick), SCMP_SYS(mount_setattr),
                SCMP_SYS(keyctl), SCMP_SYS(add_key), SCMP_SYS(request_key), SCMP_SYS(bpf),
                SCMP_SYS(perf_event_open), SCMP_SYS(userfaultfd), SCMP_SYS(kexec_load),
                SCMP_SYS(kexec_file_load), SCMP_SYS(init_module), SCMP_SYS(finit_module),
                SCMP_SYS(delete_module), SCMP_SYS(open_by_handle_at)};
  for (unsigned i = 0; i < sizeof deny / sizeof *deny; i++) R0(eperm, deny[i]);
  R1(eperm, SCMP_SYS(ioctl), SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffULL, TIOCSTI));
  R1(eperm, SCMP_SYS(ioctl), SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffULL, TIOCLINUX));
  R1(eperm, SCMP_SYS(socket), SCMP_A0(SCMP_CMP_EQ, AF_UNIX));
  R1(eperm, SCMP_SYS(socket), SCMP_A0(SCMP_CMP_NE, AF_UNIX));
  R1(eperm, SCMP_SYS(socketpair), SCMP_A0(SCMP_CMP_NE, AF_UNIX));
  unsigned long long sb[] = {S_ISUID, S_ISGID};
  for (int i = 0; i < 2; i++) {
    unsigned long long b = sb[i];
    R1(eperm, SCMP_SYS(chmod), SCMP_A1(SCMP_CMP_MASKED_EQ, b, b));
    R1(eperm, SCMP_SYS(fchmod), SCMP_A1(SCMP_CMP_MASKED_EQ, b, b));
    R1(eperm, SCMP_SYS(fchmodat), SCMP_A2(SCMP_CMP_MASKED_EQ, b, b));
    R1(eperm, 452, SCMP_A2(SCMP_CMP_MASKED_EQ, b, b));
    R2(eperm, SCMP_SYS(open), SCMP_A1(SCMP_CMP_MASKED_EQ, O_CREAT, O_CREAT), SCMP_A2(SCMP_CMP_MASKED_EQ, b, b));
    R2(eperm, SCMP_SYS(openat), SCMP_A2(SCMP_CMP_MASKED_EQ, O_CREAT, O_CREAT), SCMP_A3(SCMP_CMP_MASKED_EQ, b, b));
    R1(eperm, SCMP_SYS(creat), SCMP_A1(SCMP_CMP_MASKED_EQ, b, b));
    R1(eperm, SCMP_SYS(mknod), SCMP_A1(SCMP_CMP_MASKED_EQ, b, b));
    R1(eperm, SCMP_SYS(mknodat), SCMP_A2(SCMP_CMP_MASKED_EQ, b, b));
  }
  R0(enosys, SCMP_SYS(openat2));
  int mem = memfd_create("bpf", MFD_CLOEXEC);
  if (seccomp_export_bpf(c, mem) < 0) die("export");
  off_t sz = lseek(mem, 0, SEEK_END);
  struct sock_filter* f = malloc(sz);
  pread(mem, f, sz, 0);
  close(mem);
  g_prog.len = sz / sizeof(struct sock_filter);
  g_prog.filter = f;
  g_insns = g_prog.len;
  seccomp_release(c);
}
static struct sock_filter one_insn[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};

// ---------------------------------------------------------------- Landlock (uexec's ruleset)
struct ll_attr { uint64_t fs, net, scoped; };
struct ll_pb { uint64_t allowed; int32_t fd; } __attribute__((packed));
static int g_abi;
static uint64_t all_fs(void) {
  uint64_t r = (1ULL << 13) - 1;
  if (g_abi >= 2) r |= 1ULL << 13;
  if (g_abi >= 3) r |= 1ULL << 14;
  if (g_abi >= 5) r |= 1ULL << 15;
  return r;
}
static int ll_add_fd(int rs, int fd, uint64_t rights, int is_dir) {
  struct ll_pb a = {rights & all_fs() & (is_dir ? ~0ULL : (1 | 2 | 4 | (1ULL << 14) | (1ULL << 15))), fd};
  if (!a.allowed) return 0;
  return syscall(SYS_landlock_add_rule, rs, 1, &a, 0) < 0 ? errno : 0;
}
static void ll_add(int rs, const char* path, uint64_t rights) {
  int fd = open(path, O_PATH | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st;
  fstat(fd, &st);
  if (ll_add_fd(rs, fd, rights, S_ISDIR(st.st_mode))) die("landlock_add_rule");
  close(fd);
}
static const char* g_ws = "/tmp/zygote-spawn-ws";  // the sandbox's writable root
static uint64_t dev_rights(void) { return 4 | 2 | (g_abi >= 5 ? 1ULL << 15 : 0); }
// Built in the manager per spawn, as uexec's add_landlock_sandbox does.
static int build_ruleset(int tty) {
  struct ll_attr a = {all_fs(), 3, 3};
  size_t sz = g_abi >= 6 ? 24 : g_abi >= 4 ? 16 : 8;
  int rs = syscall(SYS_landlock_create_ruleset, &a, sz, 0);
  if (rs < 0) die("landlock_create_ruleset");
  fcntl(rs, F_SETFD, FD_CLOEXEC);
  ll_add(rs, "/", 4 | 8 | 1);
  const char* devs[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx"};
  for (int i = 0; i < 7; i++) ll_add(rs, devs[i], dev_rights());
  ll_add(rs, "/proc", 4 | 8);
  ll_add(rs, "/dev/shm", all_fs());
  ll_add(rs, g_ws, all_fs());
  if (tty >= 0 && ll_add_fd(rs, tty, dev_rights(), 0)) die("landlock tty rule");
  return rs;
}

// ---------------------------------------------------------------- child side (shared)
static int g_last_cap = 40;
struct child_args {
  const char* path; char* const* argv; char* const* envp; const char* cwd;
  int in, out, err, tty, ruleset;
  int sandbox;        // bitmask: 1 NNP, 2 securebits+capbset, 4 landlock, 8 capset, 16 seccomp
  int err_no; const char* step;
};
static int capset_none(void) {
  struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct d[2] = {{0}};
  return syscall(SYS_capset, &h, d);
}
static int drop_privs_full(void) {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) return -1;
  if (prctl(PR_SET_SECUREBITS, 0x3f) < 0) return -1;  // NOROOT|NO_SETUID_FIXUP|... and locks
  for (int cap = 0; cap <= g_last_cap; ++cap)
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL) return -1;
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  return 0;
}
#define FAIL(s) do { a->err_no = errno; a->step = s; _exit(127); } while (0)
static int child_main(void* raw) {
  struct child_args* a = raw;
  struct sigaction dfl = {0};
  dfl.sa_handler = SIG_DFL;
  for (int s = 1; s < NSIG; ++s) if (s != SIGKILL && s != SIGSTOP) sigaction(s, &dfl, NULL);
  if (setsid() < 0) FAIL("setsid");
  if (a->tty >= 0) {
    if (ioctl(a->tty, TIOCSCTTY, 0) < 0) FAIL("TIOCSCTTY");
    for (int fd = 0; fd < 3; fd++) if (dup2(a->tty, fd) < 0) FAIL("dup2 tty");
  } else {
    if (dup2(a->in, 0) < 0 || dup2(a->out, 1) < 0 || dup2(a->err, 2) < 0) FAIL("dup2");
  }
  if (a->cwd && chdir(a->cwd) < 0) FAIL("chdir");
  int sb = a->sandbox;
  if ((sb & 1) && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) FAIL("nnp");
  if ((sb & 2) && drop_privs_full() < 0) FAIL("privs");
  if ((sb & 4) && syscall(SYS_landlock_restrict_self, a->ruleset, 0) < 0) FAIL("landlock_restrict_self");
  if ((sb & 8) && capset_none() < 0) FAIL("capset");
  if ((sb & 16) && syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &g_prog) < 0) FAIL("seccomp");
  syscall(SYS_close_range, 3, ~0U, 0);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  execve(a->path, a->argv, a->envp);
  FAIL("execve");
}

#define STACK_SZ (256 * 1024)
static char* g_stack;
// Returns pid (and pidfd if asked); a->err_no set if the child failed before execve.
static pid_t vfork_spawn(struct child_args* a, int extra_flags, int* pidfd) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  a->err_no = 0;
  int flags = CLONE_VM | CLONE_VFORK | SIGCHLD | extra_flags;
  pid_t pid = pidfd ? clone(child_main, g_stack + STACK_SZ, flags | CLONE_PIDFD, a, pidfd)
                    : clone(child_main, g_stack + STACK_SZ, flags, a);
  int e = errno;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  errno = e;
  return pid;
}

// ---------------------------------------------------------------- fd passing
struct req {
  int op;            // 0 ping (round trip only), 1 spawn vfork-style, 2 spawn fork-style,
                     // 3 CLONE_VM without VFORK: reply at once, then wait for exec via CLONE_CHILD_CLEARTID
  int want_pidfd;
  int use_tty;
  int nfd;
  int sandbox;
  char blob[3072];   // path\0 argv... \0\0 env... \0\0 cwd\0
};
struct rep { int pid; int err_no; char step[32]; int has_pidfd; };

static ssize_t send_fds(int s, const void* buf, size_t len, const int* fds, int n) {
  char cbuf[CMSG_SPACE(sizeof(int) * 8)];
  struct iovec iov = {(void*)buf, len};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
  if (n) {
    m.msg_control = cbuf;
    m.msg_controllen = CMSG_SPACE(sizeof(int) * n);
    struct cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET; c->cmsg_type = SCM_RIGHTS; c->cmsg_len = CMSG_LEN(sizeof(int) * n);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
  }
  return sendmsg(s, &m, MSG_NOSIGNAL);
}
static ssize_t recv_fds(int s, void* buf, size_t len, int* fds, int* n) {
  char cbuf[CMSG_SPACE(sizeof(int) * 8)];
  struct iovec iov = {buf, len};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
  ssize_t r = recvmsg(s, &m, MSG_CMSG_CLOEXEC);
  *n = 0;
  if (r <= 0) return r;
  for (struct cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      *n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      memcpy(fds, CMSG_DATA(c), sizeof(int) * *n);
    }
  return r;
}

// ---------------------------------------------------------------- zygote
static int zygote_main(int sock, int notify) {
  g_stack = mmap(NULL, STACK_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (notify >= 0) {  // -1: a plain zygote (no filter) to isolate the mechanics
    build_bpf(notify);
    if (drop_privs_full() < 0) die("zygote privs");
    long lfd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, notify ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0, &g_prog);
    if (lfd < 0) die("zygote seccomp");
    if (notify) { int f = lfd; send_fds(sock, "L", 1, &f, 1); close(f); }
  }
  static struct req q;
  for (;;) {
    int fds[8], n;
    ssize_t r = recv_fds(sock, &q, sizeof q, fds, &n);
    if (r <= 0) _exit(0);
    struct rep p = {0};
    if (q.op == 0) {  // round trip only: reply with one fd, like a pidfd
      p.has_pidfd = 1;
      send_fds(sock, &p, sizeof p, fds, 1);
      for (int i = 0; i < n; i++) close(fds[i]);
      continue;
    }
    // parse blob
    char* argv[64]; char* envp[64]; int na = 0, ne = 0;
    char* s = q.blob;
    const char* path = s; s += strlen(s) + 1;
    while (*s) { argv[na++] = s; s += strlen(s) + 1; } s++; argv[na] = NULL;
    while (*s) { envp[ne++] = s; s += strlen(s) + 1; } s++; envp[ne] = NULL;
    const char* cwd = *s ? s : NULL;
    struct child_args a = {path, argv, envp, cwd, -1, -1, -1, -1, -1, q.sandbox, 0, NULL};
    if (q.use_tty) { a.tty = fds[0]; a.ruleset = fds[1]; }
    else { a.in = fds[0]; a.out = fds[1]; a.err = fds[2]; a.ruleset = fds[3]; }
    int pidfd = -1;
    pid_t pid;
    if (q.op == 1) {
      pid = vfork_spawn(&a, CLONE_PARENT, q.want_pidfd ? &pidfd : NULL);
    } else if (q.op == 3) {
      static volatile pid_t ctid;
      ctid = 1;
      a.err_no = 0;
      int flags = CLONE_VM | CLONE_PARENT | CLONE_CHILD_CLEARTID | SIGCHLD | (q.want_pidfd ? CLONE_PIDFD : 0);
      pid = clone(child_main, g_stack + STACK_SZ, flags, &a, &pidfd, NULL, &ctid);
      p.pid = pid < 0 ? -errno : pid;
      p.has_pidfd = pidfd >= 0;
      send_fds(sock, &p, sizeof p, &pidfd, pidfd >= 0);  // early reply: before the child execs
      if (pidfd >= 0) close(pidfd);
      pidfd = -1;
      // The child's mm release (execve or exit) clears ctid and wakes us (as CLONE_VFORK would).
      while (pid > 0 && ctid != 0) syscall(SYS_futex, &ctid, FUTEX_WAIT, 1, NULL, NULL, 0);
      // second message: the pre-exec status
    } else {
      int flags = CLONE_PARENT | SIGCHLD | (q.want_pidfd ? CLONE_PIDFD : 0);
      pid = syscall(SYS_clone, flags, 0, q.want_pidfd ? &pidfd : NULL, NULL, 0);
      if (pid == 0) child_main(&a);
    }
    p.pid = pid < 0 ? -errno : pid;
    p.err_no = a.err_no;
    if (a.step) snprintf(p.step, sizeof p.step, "%s", a.step);
    p.has_pidfd = pidfd >= 0;
    send_fds(sock, &p, sizeof p, &pidfd, pidfd >= 0);
    if (pidfd >= 0) close(pidfd);
    for (int i = 0; i < n; i++) close(fds[i]);
  }
}

// ---------------------------------------------------------------- manager
static volatile sig_atomic_t g_sigchld_count;
static volatile pid_t g_last_sigchld_pid;
static void on_chld(int sig, siginfo_t* si, void* u) {
  (void)sig; (void)u;
  g_sigchld_count++;
  g_last_sigchld_pid = si->si_pid;
}
static int g_zsock = -1, g_zsock_plain = -1;
static pid_t g_zpid, g_zpid_plain;
static char** g_env;
static int g_use_pty;

static void start_zygote(const char* self, int notify, int* listener) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) die("socketpair");
  g_zpid = fork();  // once, at start-up, so cost does not matter
  if (g_zpid == 0) {
    dup2(sv[1], 3);
    syscall(SYS_close_range, 4, ~0U, 0);
    char* av[] = {(char*)self, "--zygote", notify < 0 ? "-1" : notify ? "1" : "0", NULL};
    execve(self, av, g_env);
    _exit(127);
  }
  close(sv[1]);
  if (notify < 0) { g_zsock_plain = sv[0]; g_zpid_plain = g_zpid; return; }
  g_zsock = sv[0];
  if (notify) {
    char c; int f[8], n;
    recv_fds(g_zsock, &c, 1, f, &n);
    *listener = n ? f[0] : -1;
  }
}

struct io { int rd; int child_fds[3]; int nchild; int tty; };
static void make_io(struct io* o) {
  if (g_use_pty) {
    int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (m < 0 || grantpt(m) || unlockpt(m)) die("pty");
    char name[64];
    ptsname_r(m, name, sizeof name);
    int s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (s < 0) die("open slave");
    o->rd = m; o->tty = s; o->nchild = 1; o->child_fds[0] = s;
  } else {
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) die("pipe");
    o->rd = p[0]; o->tty = -1; o->nchild = 3;
    o->child_fds[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
    o->child_fds[1] = p[1]; o->child_fds[2] = p[1];
  }
}

static char* E_ARGV[] = {"/bin/echo", "x", NULL};
enum { V_A, V_B, V_C, V_D, V_E, V_F, V_G, V_H, V_I, V_J, V_K, V_L, V_M, V_NUM };
static const char* VNAME[] = {"A none", "B inline", "C zygote-vfork", "D zygote-fork", "E plainzyg-nosb",
                              "F inline-LL", "G inline-seccomp", "H inline-caps", "I zyg-vfork-async", "J plainzyg-async", "K zyg-earlyreply", "L zyg-noLL-async", "M zyg-async-cachedRS"};
static const int VSB[] = {0, 1 | 2 | 4 | 8 | 16, 4 | 8, 4 | 8, 0, 1 | 4, 1 | 16, 1 | 2 | 8, 4 | 8, 0, 4 | 8, 8, 4 | 8};

struct sample { double spawned, first, done; };
// One spawn; returns timings, checks output.
static struct sample run_one(int v) {
  struct sample s = {0, 0, 0};
  double t0 = now_ms();
  struct io o;
  make_io(&o);
  pid_t pid = -1;
  int pidfd = -1;
  int zyg = v == V_C || v == V_D || v == V_E || v == V_I || v == V_J || v == V_K || v == V_L || v == V_M;
  int async = v == V_I || v == V_J || v == V_L || v == V_M;
  struct rep p;
  int rf[8], rn = 0;
  int zs = v == V_E || v == V_J ? g_zsock_plain : g_zsock;
  if (!zyg) {
    int rs = VSB[v] & 4 ? build_ruleset(o.tty) : -1;
    struct child_args a = {E_ARGV[0], E_ARGV, g_env, g_ws, o.child_fds[0], o.child_fds[1], o.child_fds[2],
                           o.tty, rs, VSB[v], 0, NULL};
    if (o.tty >= 0) a.in = a.out = a.err = -1;
    pid = vfork_spawn(&a, 0, &pidfd);
    if (pid < 0) die("clone");
    if (a.err_no) { errno = a.err_no; fprintf(stderr, "%s: ", VNAME[v]); die(a.step); }
    if (rs >= 0) close(rs);
  } else {
    static int cached_rs = -1;
    if (v == V_M && cached_rs < 0) cached_rs = build_ruleset(-1);  // one per policy; no per-tty rule
    int rs = v == V_M ? dup(cached_rs) : VSB[v] & 4 ? build_ruleset(o.tty) : open("/dev/null", O_RDONLY | O_CLOEXEC);
    static struct req q;
    q.sandbox = VSB[v];
    q.op = v == V_D ? 2 : v == V_K ? 3 : 1;
    q.want_pidfd = 1;
    q.use_tty = o.tty >= 0;
    char* b = q.blob;
    b = stpcpy(b, E_ARGV[0]) + 1;
    for (char** p = E_ARGV; *p; p++) b = stpcpy(b, *p) + 1;
    *b++ = 0;
    for (char** p = g_env; *p; p++) b = stpcpy(b, *p) + 1;
    *b++ = 0;
    b = stpcpy(b, g_ws) + 1;
    int fds[4], n = 0;
    for (int i = 0; i < o.nchild; i++) fds[n++] = o.child_fds[i];
    fds[n++] = rs;
    q.nfd = n;
    if (send_fds(zs, &q, offsetof(struct req, blob) + (b - q.blob), fds, n) < 0) die("send req");
    if (!async) {
      if (recv_fds(zs, &p, sizeof p, rf, &rn) <= 0) die("recv rep");
      if (p.pid < 0 || p.err_no) { fprintf(stderr, "%s: pid %d err %d step %s\n", VNAME[v], p.pid, p.err_no, p.step); exit(1); }
      pid = p.pid;
      pidfd = rn ? rf[0] : -1;
    }
    close(rs);
  }
  s.spawned = now_ms() - t0;
  for (int i = 0; i < o.nchild; i++) if (i == 0 || o.child_fds[i] != o.child_fds[i - 1]) close(o.child_fds[i]);
  char c[16];
  ssize_t r = read(o.rd, c, sizeof c);
  s.first = now_ms() - t0;
  if (async) {  // an event loop would read output and the reply in whichever order they come
    if (recv_fds(zs, &p, sizeof p, rf, &rn) <= 0) die("recv rep");
    if (p.pid < 0 || p.err_no) { fprintf(stderr, "%s: pid %d err %d step %s\n", VNAME[v], p.pid, p.err_no, p.step); exit(1); }
    pid = p.pid;
    pidfd = rn ? rf[0] : -1;
  }
  if (r < 1 || c[0] != 'x') { fprintf(stderr, "%s: bad output r=%zd\n", VNAME[v], r); exit(1); }
  siginfo_t si = {0};
  if (pidfd >= 0) {
    if (waitid(P_PIDFD, pidfd, &si, WEXITED) < 0) die("waitid pidfd");
    if (si.si_pid != pid) { fprintf(stderr, "pidfd reaped %d expected %d\n", si.si_pid, pid); exit(1); }
  } else {
    if (waitid(P_PID, pid, &si, WEXITED) < 0) die("waitid");
  }
  s.done = now_ms() - t0;
  if (v == V_K) {  // the status message (pre-exec failure or not), already waiting by now
    struct rep p2; int rf2[8], rn2;
    if (recv_fds(zs, &p2, sizeof p2, rf2, &rn2) <= 0) die("recv status");
    if (p2.err_no) { fprintf(stderr, "K: child failed %s: %s\n", p2.step, strerror(p2.err_no)); exit(1); }
  }
  if (si.si_code != CLD_EXITED || si.si_status != 0) { fprintf(stderr, "%s: status %d/%d\n", VNAME[v], si.si_code, si.si_status); exit(1); }
  if (pidfd >= 0) close(pidfd);
  close(o.rd);
  if (o.tty >= 0) close(o.tty);
  return s;
}

static int cmpd(const void* a, const void* b) { double x = *(double*)a, y = *(double*)b; return x < y ? -1 : x > y; }
static double median(double* v, int n) {
  double* t = malloc(n * sizeof *t);
  memcpy(t, v, n * sizeof *t);
  qsort(t, n, sizeof *t, cmpd);
  double m = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
  free(t);
  return m;
}
static void mmm(double* v, int n, double* lo, double* med, double* hi) {
  double* t = malloc(n * sizeof *t);
  memcpy(t, v, n * sizeof *t);
  qsort(t, n, sizeof *t, cmpd);
  *lo = t[0]; *hi = t[n - 1]; *med = median(t, n);
  free(t);
}

// ---------------------------------------------------------------- micro costs (ms), in vfork children
enum { M_LANDLOCK, M_SECCOMP, M_SECCOMP1, M_CAPBSET, M_CLONE_EXIT };
struct micro { int what; int rs; double dt; };
static int micro_child(void* raw) {
  struct micro* m = raw;
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  double t0 = now_ms();
  switch (m->what) {
    case M_LANDLOCK: if (syscall(SYS_landlock_restrict_self, m->rs, 0) < 0) m->dt = -1; break;
    case M_SECCOMP: syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &g_prog); break;
    case M_SECCOMP1: { struct sock_fprog p = {1, one_insn}; syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &p); } break;
    case M_CAPBSET: for (int c = 0; c <= g_last_cap; c++) prctl(PR_CAPBSET_DROP, c, 0, 0, 0); break;
  }
  if (m->dt == 0) m->dt = now_ms() - t0;
  _exit(0);
}
static double micro_one(int what, int rs) {
  struct micro m = {what, rs, 0};
  pid_t p = clone(micro_child, g_stack + STACK_SZ, CLONE_VM | CLONE_VFORK | SIGCHLD, &m);
  waitpid(p, NULL, 0);
  return m.dt;
}


// ---------------------------------------------------------------- --checks: correctness probes
static void spawn_req(int zs, const char* path, char* const* av, int* fds, int n, int use_tty, int sandbox, int want_pidfd) {
  static struct req q;
  memset(&q, 0, sizeof q);
  q.op = 1; q.want_pidfd = want_pidfd; q.use_tty = use_tty; q.sandbox = sandbox;
  char* b = q.blob;
  b = stpcpy(b, path) + 1;
  for (char* const* a = av; *a; a++) b = stpcpy(b, *a) + 1;
  *b++ = 0; *b++ = 0; b = stpcpy(b, g_ws) + 1;
  if (send_fds(zs, &q, sizeof q, fds, n) < 0) die("send");
}
static int run_checks(const char* self) {
  // 1. notify zygote + PTY slave + probe
  int listener = -1;
  start_zygote(self, 1, &listener);
  printf("check: notify zygote started, listener fd in manager: %d\n", listener);
  int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  grantpt(m); unlockpt(m);
  char name[64]; ptsname_r(m, name, sizeof name);
  int sl = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  int rs = build_ruleset(sl);
  int fds[2] = {sl, rs};
  char* av[] = {getenv("ZYG_PROBE") ? getenv("ZYG_PROBE") : "./zygote_probe", NULL};
  spawn_req(g_zsock, av[0], av, fds, 2, 1, 4 | 8, 1);
  close(rs);
  pid_t pid = -1; int pidfd = -1, done = 0;
  char out[4096]; int k = 0;
  while (!done) {
    struct pollfd p[3] = {{g_zsock, POLLIN, 0}, {listener, POLLIN, 0}, {m, POLLIN, 0}};
    if (poll(p, 3, 2000) <= 0) { printf("check: timeout\n"); break; }
    if (p[0].revents & POLLIN) {
      struct rep r; int rf[8], rn;
      recv_fds(g_zsock, &r, sizeof r, rf, &rn);
      pid = r.pid; pidfd = rn ? rf[0] : -1;
      printf("check: reply pid %d err %d %s, pidfd %d\n", r.pid, r.err_no, r.step, pidfd);
    }
    if (p[1].revents & POLLIN) {
      struct seccomp_notif n; memset(&n, 0, sizeof n);
      if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &n) == 0) {
        char* sname = seccomp_syscall_resolve_num_arch(n.data.arch, n.data.nr);
        printf("check: notify from pid %u (%s the spawned child), syscall %s\n", n.pid,
               (pid_t)n.pid == pid ? "is" : pid < 0 ? "reply not yet in;" : "NOT", sname);
        free(sname);
        struct seccomp_notif_resp rp = {n.id, 0, -EPERM, 0};
        ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &rp);
      }
    }
    if (p[2].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t r = read(m, out + k, sizeof out - 1 - k);
      if (r > 0) k += r; else done = 1;
    }
  }
  out[k] = 0;
  printf("--- probe output (pty):\n%s---\n", out);
  close(sl);
  siginfo_t si = {0};
  if (pidfd >= 0 && waitid(P_PIDFD, pidfd, &si, WEXITED) == 0) printf("check: waitid(P_PIDFD) reaped %d status %d\n", si.si_pid, si.si_status);
  // 2. exit signal inheritance: a zygote whose own exit_signal is 0
  int sv[2];
  socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv);
  pid_t z = syscall(SYS_clone, 0 /* exit_signal 0 */, 0, NULL, NULL, 0);
  if (z == 0) {
    dup2(sv[1], 3); syscall(SYS_close_range, 4, ~0U, 0);
    char* zav[] = {(char*)self, "--zygote", "0", NULL};
    execve(self, zav, g_env); _exit(127);
  }
  close(sv[1]);
  int p2[2]; pipe2(p2, O_CLOEXEC);
  int dn = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int rs2 = build_ruleset(-1);
  int f2[4] = {dn, p2[1], p2[1], rs2};
  char* eav[] = {"/bin/true", NULL};
  spawn_req(sv[0], eav[0], eav, f2, 4, 0, 4 | 8, 1);
  struct rep r; int rf[8], rn;
  recv_fds(sv[0], &r, sizeof r, rf, &rn);
  close(p2[1]); char c; read(p2[0], &c, 1);
  usleep(50000);
  siginfo_t s2 = {0};
  char sp[64], st[1024]; snprintf(sp, sizeof sp, "/proc/%d/stat", z);
  FILE* sf = fopen(sp, "r"); fgets(st, sizeof st, sf); fclose(sf);
  char* q = strrchr(st, ')'); int field = 2; char* tok = strtok(q + 2, " ");
  while (tok && ++field < 38) tok = strtok(NULL, " ");
  printf("check: zygote exit_signal (stat field 38) = %s\n", tok);
  snprintf(sp, sizeof sp, "/proc/%d/stat", r.pid);
  sf = fopen(sp, "r"); fgets(st, sizeof st, sf); fclose(sf);
  q = strrchr(st, ')'); field = 2; tok = strtok(q + 2, " ");
  while (tok && ++field < 38) tok = strtok(NULL, " ");
  printf("check: its child's exit_signal = %s\n", tok);
  int w1 = waitid(P_PID, r.pid, &s2, WEXITED | WNOHANG);
  int e1 = errno;
  printf("check: waitid(P_PID) without __WALL: rc %d si_pid %d\n", w1, s2.si_pid);
  memset(&s2, 0, sizeof s2);
  int w2 = rn ? waitid(P_PIDFD, rf[0], &s2, WEXITED | WNOHANG) : -2;
  int e2 = errno;
  int w3 = waitid(P_PID, r.pid, &s2, WEXITED | __WALL);
  printf("check: zygote with exit_signal 0 -> child %d: waitid(P_PID,WEXITED) %d %s; waitid(P_PIDFD) %d %s; with __WALL %d (si_pid %d)\n",
         r.pid, w1, w1 < 0 ? strerror(e1) : "ok", w2, w2 < 0 ? strerror(e2) : "ok", w3, s2.si_pid);
  close(sv[0]);
  waitpid(z, NULL, __WALL);
  kill(g_zpid, SIGTERM);
  return 0;
}
int main(int argc, char** argv, char** envp) {
  g_env = envp;
  g_abi = syscall(SYS_landlock_create_ruleset, NULL, 0, 1);
  FILE* f = fopen("/proc/sys/kernel/cap_last_cap", "r");
  if (f) { fscanf(f, "%d", &g_last_cap); fclose(f); }
  if (argc >= 3 && !strcmp(argv[1], "--zygote")) return zygote_main(3, atoi(argv[2]));
  int rounds = 3, runs = 200, heap_mib = 200;
  const char* variants = "ABC";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--rounds")) rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--runs")) runs = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--pty")) g_use_pty = 1;
    else if (!strcmp(argv[i], "--heap")) heap_mib = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--variants")) variants = argv[++i];
  }
  mkdir(g_ws, 0755);
  g_stack = mmap(NULL, STACK_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  // A big manager: touched heap.
  size_t hb = (size_t)heap_mib << 20;
  char* heap = malloc(hb);
  for (size_t i = 0; i < hb; i += 4096) heap[i] = (char)i;
  build_bpf(0);
  struct sigaction sa = {0};
  sa.sa_sigaction = on_chld;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGCHLD, &sa, NULL);
  char self[4096];
  ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
  self[sl] = 0;
  for (int i = 1; i < argc; i++) if (!strcmp(argv[i], "--checks")) return run_checks(self);
  start_zygote(self, 0, NULL);
  start_zygote(self, -1, NULL);
  printf("landlock ABI %d, BPF %d insns, heap %d MiB, stdio %s, uid %d, %d rounds x %d runs\n", g_abi, g_insns,
         heap_mib, g_use_pty ? "pty" : "pipe", getuid(), rounds, runs);

  // ---- correctness probes
  {
    int before = g_sigchld_count;
    struct sample s = run_one(V_C);
    (void)s;
    usleep(20000);
    printf("check: C child is manager's child, waitid(P_PIDFD) on zygote-made pidfd reaped it; SIGCHLD to manager: %s (count +%d, last si_pid %d)\n",
           g_sigchld_count > before ? "yes" : "NO", g_sigchld_count - before, (int)g_last_sigchld_pid);
    // seccomp really inherited: child's /proc/self/status Seccomp line
    int p[2]; pipe2(p, O_CLOEXEC);
    char* av[] = {"/bin/grep", "-E", "^(Seccomp|Seccomp_filters|NoNewPrivs|CapBnd|CapEff|PPid):", "/proc/self/status", NULL};
    int rs = build_ruleset(-1);
    static struct req q;
    q.op = 1; q.want_pidfd = 0; q.use_tty = 0; q.sandbox = 4 | 8;
    char* b = q.blob;
    b = stpcpy(b, av[0]) + 1;
    for (char** a = av; *a; a++) b = stpcpy(b, *a) + 1;
    *b++ = 0; *b++ = 0; *b++ = 0;
    int dn = open("/dev/null", O_RDONLY);
    int fds[4] = {dn, p[1], p[1], rs};
    send_fds(g_zsock, &q, sizeof q, fds, 4);
    struct rep r; int rf[8], rn;
    recv_fds(g_zsock, &r, sizeof r, rf, &rn);
    close(p[1]); close(dn); close(rs);
    char buf[1024] = {0};
    int k = 0, got;
    while ((got = read(p[0], buf + k, sizeof buf - 1 - k)) > 0) k += got;
    close(p[0]);
    waitpid(r.pid, NULL, 0);
    printf("check: zygote child (pid %d, manager %d, zygote %d) status:\n%s", r.pid, getpid(), g_zpid, buf);
  }
  if (g_use_pty) {
    // controlling tty check: run /bin/sh -c 'tty; ps -o pid,sid,tty -p $$'
    printf("check: TIOCSCTTY path exercised by every C/D spawn in --pty mode (child_main fails otherwise)\n");
  }

  // ---- micro costs
  {
    enum { NM = 200 };
    double ll[NM], sc[NM], sc1[NM], cb[NM], rt[NM], rsb[NM];
    for (int i = 0; i < NM; i++) {
      double t = now_ms();
      int rs = build_ruleset(-1);
      rsb[i] = now_ms() - t;
      ll[i] = micro_one(M_LANDLOCK, rs);
      close(rs);
      sc[i] = micro_one(M_SECCOMP, -1);
      sc1[i] = micro_one(M_SECCOMP1, -1);
      cb[i] = micro_one(M_CAPBSET, -1);
      // round trip with SCM_RIGHTS: 4 fds out, 1 back
      int p[2]; pipe2(p, O_CLOEXEC);
      int fds[4] = {p[0], p[1], p[1], p[0]};
      static struct req q;
      q.op = 0;
      int rf[8], rn; struct rep r;
      t = now_ms();
      send_fds(g_zsock, &q, offsetof(struct req, blob) + 2600, fds, 4);
      recv_fds(g_zsock, &r, sizeof r, rf, &rn);
      rt[i] = now_ms() - t;
      for (int j = 0; j < rn; j++) close(rf[j]);
      close(p[0]); close(p[1]);
    }
    printf("micro (median of %d, ms): build ruleset in manager %.4f | landlock_restrict_self %.4f | seccomp load %d insns %.4f | 1 insn %.4f | 41x PR_CAPBSET_DROP %.4f | zygote round trip (2.6 KB + 4 fds out, 1 fd back) %.4f\n",
           NM, median(rsb, NM), median(ll, NM), g_insns, median(sc, NM), median(sc1, NM), median(cb, NM), median(rt, NM));
  }

  // ---- interleaved rounds
  int nv = strlen(variants);
  int vs[V_NUM];
  for (int i = 0; i < nv; i++) vs[i] = variants[i] - 'A';
  double* first[V_NUM]; double* done[V_NUM]; double* spw[V_NUM];
  double rmf[V_NUM][64], rmd[V_NUM][64], rms[V_NUM][64];
  for (int v = 0; v < V_NUM; v++) { first[v] = malloc(runs * sizeof(double)); done[v] = malloc(runs * sizeof(double)); spw[v] = malloc(runs * sizeof(double)); }
  for (int i = 0; i < 10; i++) for (int k = 0; k < nv; k++) run_one(vs[k]);  // warm-up
  for (int r = 0; r < rounds; r++) {
    for (int i = 0; i < runs; i++)
      for (int k = 0; k < nv; k++) {
        int v = vs[(i + k) % nv];  // rotating start
        struct sample s = run_one(v);
        first[v][i] = s.first; done[v][i] = s.done; spw[v][i] = s.spawned;
      }
    printf("round %d (spawn-returned/first-byte/reaped ms):", r);
    for (int k = 0; k < nv; k++) {
      int v = vs[k];
      rmf[v][r] = median(first[v], runs); rmd[v][r] = median(done[v], runs); rms[v][r] = median(spw[v], runs);
      printf("  %s: %.3f/%.3f/%.3f", VNAME[v], rms[v][r], rmf[v][r], rmd[v][r]);
    }
    printf("\n");
    fflush(stdout);
  }
  printf("\nper-round medians, min/median/max over %d rounds (ms):\n", rounds);
  for (int k = 0; k < nv; k++) {
    int v = vs[k]; double a, b, c, d, e, g;
    mmm(rmf[v], rounds, &a, &b, &c); mmm(rmd[v], rounds, &d, &e, &g);
    printf("  %-16s first byte %.3f/%.3f/%.3f   reaped %.3f/%.3f/%.3f\n", VNAME[v], a, b, c, d, e, g);
  }
  printf("ratios to A, per round, min/median/max:\n");
  for (int k = 0; k < nv; k++) {
    int v = vs[k];
    if (v == V_A) continue;
    double rf[64], rd[64], a, b, c, d, e, g;
    for (int r = 0; r < rounds; r++) { rf[r] = rmf[v][r] / rmf[V_A][r]; rd[r] = rmd[v][r] / rmd[V_A][r]; }
    mmm(rf, rounds, &a, &b, &c); mmm(rd, rounds, &d, &e, &g);
    printf("  %s/A  first byte %.3f/%.3f/%.3f   reaped %.3f/%.3f/%.3f\n", VNAME[v], a, b, c, d, e, g);
  }
  free(heap);
  return 0;
}
