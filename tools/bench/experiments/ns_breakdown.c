// ns_breakdown.c: what each namespace and each mount step of the LinuxNamespaces sandbox costs
// (issue 22; docs/performance.md §3 S3-ns: a sandboxed `/bin/echo x` should cost <= 2x an
// unsandboxed one).
//
// WHAT IT MEASURES
//
// One sample is one spawn of `/bin/echo x` on a fresh PTY, timed from before the PTY is
// opened until the command's output has been read to EOF (EIO on the master) and the process
// the manager started has been reaped (for the sandboxed variants that is pid 1, uexec-init,
// which exits after the command and takes the namespaces down with it). This mirrors
// bench_sandbox's S3 workload without ProcessManager, the event loop, the ring and the policy
// planning (resolve(), stubs, the /proc/net/unix sweep): those are the same for every variant
// here, or (planning) only in the sandboxed ones and measured by bench_sandbox's plan-* rows.
//
// The variants are cumulative: each adds one thing to the one before, in the order below, and
// the last of the chain ("+seccomp") is the whole namespace sandbox as src/policy/linux_sandbox.cc
// and src/pty/spawn.cc build it for a workspace-write, network-off policy:
//
//   base        clone(CLONE_VM|CLONE_VFORK|CLONE_PIDFD) as pty/spawn.cc's child_main does it:
//               every signal blocked around clone; the child resets all dispositions, setsid,
//               TIOCSCTTY, dup2 of the slave onto 0-2, chdir to the workspace, close_range(3),
//               unblock, execve("/bin/echo").
//   +user       CLONE_NEWUSER; the child writes /proc/self/setgroups "deny", uid_map and
//               gid_map ("0 0 1" as root: step_maps).
//   +mnt        CLONE_NEWNS (a copy of the host's mount table, no step yet).
//   +pid        CLONE_NEWPID, and with it the supervised shape of spawn.cc: the cloned process
//               is pid 1 (pid1_main: reset dispositions, setsid, PR_SET_PDEATHSIG), it clones
//               the command's process (pid 2, CLONE_VM|CLONE_VFORK, child_main as above), puts
//               /dev/null on 0-2 and the status pipe on 3, and execveat()s the init program from
//               a sealed memfd (as linux_sandbox.cc's init_fd()). Init waits for the command,
//               writes its status record on fd 3 and exits; the manager reads the status pipe
//               to EOF. The init is build/src/uexec-init when found (--init PATH), else this
//               program itself re-exec'd as a minimal init (dynamic: slower to exec).
//   +ipc        CLONE_NEWIPC.
//   +net        CLONE_NEWNET (uexec: only when the policy's network is off, the default).
//   --- step_view, each piece as the backend does it:
//   +slave      mount("/", MS_REC|MS_SLAVE).
//   +ro-root    mount_setattr("/", AT_RECURSIVE, RDONLY|NOSUID).
//   +writable   the writable roots (the workspace and /tmp): open_tree(OPEN_TREE_CLONE|
//               AT_RECURSIVE) of each through openat2(RESOLVE_NO_SYMLINKS) before the root
//               turns read-only, then mount_setattr(NOSUID|NODEV) and move_mount back onto it.
//   +carve-outs the workspace's four protected names (.git .codex .agents .uexec; stubs, as in
//               bench_sandbox's empty workspace): clone, mount_setattr(RDONLY|NOSUID|NODEV),
//               move_mount onto itself.
//   +mask-src   the masks' source: fsopen/fsconfig/fsmount of a 4k tmpfs with an empty mode-000
//               file and directory (made on every spawn, even with no mask to place: this
//               host has none; each mask would then cost about what one carve-out costs).
//   +dev        a fresh /dev: six open_tree clones of the host's null zero full random urandom
//               tty (taken early), tmpfs on /dev, per node creat + move_mount, the fd/stdin/
//               stdout/stderr symlinks, and the read-only bind remount of /dev.
//   +devpts     mkdir /dev/pts, a newinstance devpts, the /dev/ptmx symlink.
//   +console    the session's PTY by name (readlink /proc/self/fd/N, open_tree, taken early),
//               creat /dev/console, move_mount.
//   +shm        mkdir /dev/shm, a tmpfs on it.
//   +proc       mount proc on /proc (this pid namespace's).
//   +proc-ro    /proc/sys, sysrq-trigger, irq, bus, fs: clone, read-only, move_mount each.
//   --- the rest of a sandboxed spawn:
//   +supervisor the manager<->init datagram socketpair made per spawn; pid 1 keeps
//               CAP_SYS_ADMIN and CAP_SYS_PTRACE as ambient across init's exec (spawn.cc's
//               keep_init_capabilities) and init makes its own mask source (late deny-read).
//   +landlock   the ruleset made per spawn in the manager ("/" read, six device nodes, the
//               writable roots, TCP bind/connect handled, abstract-unix and signal scopes on
//               ABI >= 6), pid 1's view rules (/proc, /dev/pts, /dev/ptmx, /dev/shm, the tty),
//               the command's tty rule and landlock_restrict_self.
//   +caps       step_privileges: no_new_privs, securebits, drop the bounding set, clear the
//               ambient set, capset to nothing.
//   +seccomp    the notify flavour of the filter, loaded in the command with
//               SECCOMP_FILTER_FLAG_NEW_LISTENER; the listener goes to pid 1 over the
//               socketpair and init polls it. (= the whole LinuxNamespaces spawn)
//
// Then alternatives, each the whole sandbox with one change (their delta is to "+seccomp"):
//
//   alt:net-shared  no CLONE_NEWNET: the spawning thread setns()es into one empty network
//                   namespace made once at start, clones, and setns()es back. Cheap, but every
//                   sandbox then shares that netns (see ISOLATION below). Root only.
//   alt:net-pool    no CLONE_NEWNET: a fresh netns made per spawn *before* the clock starts
//                   (as a background pool would), entered by setns around clone as above.
//                   Each sandbox still gets its own, never-reused netns. Root only.
//   alt:no-net      no CLONE_NEWNET at all (host netns): what the netns costs at the end of
//                   the chain. Not a proposal (network-off sandboxes would see the host's
//                   loopback and abstract sockets).
//   alt:hold-mnt    the manager holds the mount namespace (pid 1 sends it an fd of
//                   /proc/self/ns/mnt over a socketpair) and closes it only after the clock
//                   stops: the namespace's teardown (umount of the view's ~40 mounts and an
//                   RCU grace period) leaves init's exit path. That later close is timed
//                   apart ("deferred").
//   alt:init-noexec measurement only: pid 1 is cloned without CLONE_VFORK and stays in this
//                   program (sharing its memory) as the init instead of exec'ing one: what
//                   the exec of init (a new mm, its page faults, its exit) costs the spawn.
//   alt:cmd-pid1    no init: the command itself is pid 1 (bwrap's --as-pid-1), its seccomp
//                   listener goes to the manager. Not a drop-in: pid 1 ignores signals it has
//                   no handler for (Ctrl-C, SIGTERM), inherits orphans, and nothing inside
//                   could place late deny-read masks.
//   alt:+uts, alt:+cgroup   CLONE_NEWUTS / CLONE_NEWCGROUP on top (uexec uses neither).
//
// COLUMNS
//
// Samples are interleaved: every iteration runs each variant once, starting from a rotating
// variant. Per round (N samples per variant) we take each variant's median; "ratio" is the
// median over rounds of (variant median / base median), with the min and max over rounds.
// "median" is the median of all samples; "step" is its difference to the previous variant in
// the chain (alternatives: to the full sandbox), also as % of base. "tail" is the median time
// from the output's EOF (the command's exit closed the slave) to the reap of the process the
// manager started: for the sandboxes, init waking, writing its status, exiting, and the
// namespaces' teardown on its exit path.
//
// OTHER MODES
//
// --timeline K   after the table, K more samples of base, the whole sandbox and the two init
//                alternatives, with the median moment (ms after the start) of each point of a
//                spawn: the clone, pid 1's maps, view and Landlock rules, the command's start
//                and execve, init's execveat, the manager's resume, EOF, status, reap. Every
//                process until its exec shares our memory, so the stamps are plain stores.
// --steps K      only this: the mount view's steps timed one by one in place (K times, in a
//                long-lived pid 1 that re-enters a fresh copy of the host's mount namespace
//                before each view), the creation of each other namespace type by unshare(),
//                and the command's own steps (Landlock, privileges, seccomp) in CLONE_VM
//                children. Microseconds, free of the whole-spawn noise that hides steps below
//                ~0.1 ms in the table.
// --cpu K        each variant also run K times back to back; the whole machine's busy time
//                (/proc/stat, all CPUs, so the kernel's deferred work such as the network
//                namespace's cleanup_net counts) divided by K, after a settle delay. Only
//                meaningful on an otherwise idle machine.
//
// ISOLATION NOTES (for the alternatives)
//
// With the network off, uexec's seccomp filter refuses socket() for every family but AF_UNIX,
// so what a network namespace still separates between sandboxes is the abstract unix socket
// namespace and /proc/net. Landlock ABI >= 6's abstract-unix scope (which uexec sets) stops a
// connect() or sendto() to another domain's abstract socket, but not bind(): sandboxes sharing
// one netns can squat names the other wants (denial of service) and signal each other by
// probing bind() for EADDRINUSE (a covert channel), and /proc/net/unix lists the other
// sandboxes' sockets. Below ABI 6 they could simply connect to each other. A shared empty
// netns keeps the host out (its loopback and abstract sockets stay unreachable) but is
// weaker between sandboxes; a pool of fresh per-spawn namespaces keeps today's isolation and
// only moves the creation off the critical path (not its CPU).
//
// SIMPLIFICATIONS (vs. uexec)
//
// - No ProcessManager, event loop, ring or policy planning; the output is read with blocking
//   reads, the reap is a blocking waitpid. The unsandboxed baseline has no per-session cgroup
//   (uexec's unsandboxed sessions are born in one when containment is on; sandboxed ones are
//   contained by their pid namespace instead), so it is a little cheaper than uexec's.
// - The seccomp filter is hand-written BPF implementing the same rules as policy/seccomp.cc
//   (root, network-off, notify flavour: namespaces, the deny list, TIOCSTI/TIOCLINUX, non-unix
//   sockets, setuid/setgid modes, ENOSYS for io_uring/clone3/openat2) but as a linear chain,
//   not libseccomp's binary tree: its load (the kernel emulates it per syscall number for its
//   allow cache) costs somewhat more than uexec's.
// - The fallback init (when build/src/uexec-init is absent) and the in-process one of
//   alt:init-noexec do what uexec-init does on the way of `echo x` (signal set-up, mask source
//   with a control channel, reap, status record), not the late masks or denial counting.
// - The policy is fixed: a fresh workspace under /var/tmp with the four stub carve-outs, host
//   /tmp writable, no pins, no masks, no deny-read, network off.
// - x86_64 only (the BPF checks AUDIT_ARCH_X86_64). Run as root (the netns alternatives setns
//   into a network namespace, which needs CAP_SYS_ADMIN over it).
//
// BUILD AND RUN
//
//   gcc -O2 -Wall -o /tmp/ns_breakdown tools/bench/experiments/ns_breakdown.c
//   cd <source root> && sudo /tmp/ns_breakdown [--quick] [--rounds R] [--runs N] [--cpu K]
//                          [--timeline K] [--init PATH] [--workspace-parent DIR] [--chain-only]
//   sudo /tmp/ns_breakdown --steps 100
//
// Run it from the source root after a build so that build/src/uexec-init is found (or pass
// --init). Defaults: 5 rounds of 30 samples per variant (about 30 s on 2 cores); --quick is 3
// rounds of 12, --chain-only drops the alternatives. Run nothing else heavy meanwhile: on a
// 2-core machine a compiler moves the numbers by more than the smaller steps cost.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/openat2.h>
#include <linux/securebits.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#if !defined(__x86_64__)
#error "ns_breakdown: x86_64 only (the seccomp filter checks AUDIT_ARCH_X86_64)"
#endif

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

// ============================================================================================
// The variants
// ============================================================================================

enum {
  F_USER = 1u << 0,
  F_MNT = 1u << 1,
  F_PID = 1u << 2,
  F_IPC = 1u << 3,
  F_NET = 1u << 4,
  F_SLAVE = 1u << 5,
  F_RO = 1u << 6,
  F_WRITABLE = 1u << 7,
  F_CARVE = 1u << 8,
  F_MASKSRC = 1u << 9,
  F_DEV = 1u << 10,
  F_DEVPTS = 1u << 11,
  F_CONSOLE = 1u << 12,
  F_SHM = 1u << 13,
  F_PROC = 1u << 14,
  F_PROCRO = 1u << 15,
  F_SUPER = 1u << 16,
  F_LANDLOCK = 1u << 17,
  F_CAPS = 1u << 18,
  F_SECCOMP = 1u << 19,
  // Alternatives (not part of uexec's spawn).
  X_NET_SHARED = 1u << 24,
  X_NET_POOL = 1u << 25,
  X_HOLD_MNT = 1u << 26,
  X_UTS = 1u << 27,
  X_CGROUP = 1u << 28,
  X_CMD_PID1 = 1u << 29,
  X_INIT_NOEXEC = 1u << 30,
};
#define F_ALL                                                                                        \
  (F_USER | F_MNT | F_PID | F_IPC | F_NET | F_SLAVE | F_RO | F_WRITABLE | F_CARVE | F_MASKSRC | F_DEV | \
   F_DEVPTS | F_CONSOLE | F_SHM | F_PROC | F_PROCRO | F_SUPER | F_LANDLOCK | F_CAPS | F_SECCOMP)
#define F_ANY_VIEW (F_SLAVE | F_RO | F_WRITABLE | F_CARVE | F_MASKSRC | F_DEV | F_PROC)

// The chain, in the order the steps are added (each row has every flag of the rows above).
static const struct {
  const char* name;
  unsigned add;
} kChain[] = {
    {"base", 0},
    {"+user", F_USER},
    {"+mnt", F_MNT},
    {"+pid (init)", F_PID},
    {"+ipc", F_IPC},
    {"+net", F_NET},
    {"+slave", F_SLAVE},
    {"+ro-root", F_RO},
    {"+writable", F_WRITABLE},
    {"+carve-outs", F_CARVE},
    {"+mask-src", F_MASKSRC},
    {"+dev", F_DEV},
    {"+devpts", F_DEVPTS},
    {"+console", F_CONSOLE},
    {"+shm", F_SHM},
    {"+proc", F_PROC},
    {"+proc-ro", F_PROCRO},
    {"+supervisor", F_SUPER},
    {"+landlock", F_LANDLOCK},
    {"+caps", F_CAPS},
    {"+seccomp (=uexec)", F_SECCOMP},
};
#define CHAIN_LEN (sizeof kChain / sizeof kChain[0])

// Alternatives: the whole sandbox, minus `drop`, plus `add`.
static const struct {
  const char* name;
  unsigned drop, add;
} kAlts[] = {
    {"alt:net-shared", F_NET, X_NET_SHARED},
    {"alt:net-pool", F_NET, X_NET_POOL},
    {"alt:no-net", F_NET, 0},
    {"alt:hold-mnt", 0, X_HOLD_MNT},
    {"alt:init-noexec", 0, X_INIT_NOEXEC},
    {"alt:cmd-pid1", 0, X_CMD_PID1},
    {"alt:+uts", 0, X_UTS},
    {"alt:+cgroup", 0, X_CGROUP},
};
#define ALTS_LEN (sizeof kAlts / sizeof kAlts[0])

#define MAX_VARIANTS (CHAIN_LEN + ALTS_LEN)

struct variant {
  const char* name;
  unsigned flags;
  int chain_prev;  // index of the variant its "step" is measured against
  double* total;   // every sample's span, ms
  double* tail;    // every sample's EOF -> reap, ms
  double* deferred;  // alt:hold-mnt: the close of the held namespace, ms
  double* round;     // this round's spans
  double* ratios;    // per round: median / base median
  int n, nround, nratios;
  double cpu_ms;  // --cpu: busy time per spawn, all CPUs
};

// ============================================================================================
// The fixed policy: a fresh workspace with four stub carve-outs, /tmp writable
// ============================================================================================

static char g_workspace[256];
static const char* const kStubs[] = {".git", ".codex", ".agents", ".uexec"};
#define NSTUBS 4
static char g_stub_paths[NSTUBS][300];
static const char* g_writable[2];  // the workspace, /tmp
#define NWRITABLE 2

static const char* const kDevNodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
#define NDEV 6

static int g_init_fd = -1;           // the init program, a sealed memfd
static const char* g_init_name = "";  // what it is, for the report
static int g_self_init = 0;           // this program re-exec'd as init
static int g_landlock_abi = 0;
static int g_last_cap = 40;
static int g_host_net = -1, g_shared_net = -1;  // alt:net-shared

// ============================================================================================
// What a child reads and writes (pty/spawn.cc's ChildArgs, reduced)
// ============================================================================================

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// --timeline: moments of one spawn, stamped by whoever reaches them (the children share our
// memory until they exec). Those a variant does not pass stay 0.
enum {
  T_PLANNED,       // manager: PTY, pipes, ruleset made; clone() next
  T_CHILD,         // the cloned process runs (pid 1, or the command's process without one)
  T_MAPS,          // pid 1: uid/gid maps written
  T_VIEW,          // pid 1: mount view built
  T_SETUP,         // pid 1: Landlock view rules added; the command's clone next
  T_CMD,           // the command's process runs
  T_CMD_EXEC,      // ... its steps done: execve(/bin/echo) next
  T_PID1_RESUMED,  // pid 1: the command's clone returned (its execve took over)
  T_INIT_EXEC,     // pid 1: execveat(init) next
  T_RESUMED,       // manager: clone() returned (CLONE_VFORK: the cloned process exec'd)
  T_EOF,           // manager: the output's EOF
  T_STATUS,        // manager: init's status record arrived
  T_REAPED,        // manager: waitpid returned
  T_N
};
static const char* const kMoments[T_N] = {
    "planned (PTY, pipes, ruleset)", "cloned process runs", "pid 1: maps written", "pid 1: view built",
    "pid 1: landlock view rules", "command process runs", "command: execve next", "pid 1: command clone returned",
    "pid 1: execveat(init) next", "manager: clone returned", "manager: output EOF", "manager: status record",
    "manager: reaped"};
#define STAMP(a, t) ((a)->ts[t] = now_ms())

// --steps: the end of each group of step_view's mount operations, in the code's order.
enum {
  M_START,
  M_SLAVE,         // mount("/", MS_REC|MS_SLAVE)
  M_CLONE_W,       // open_tree clones of the writable roots (before / turns read-only)
  M_CLONE_DEV,     // open_tree clones of the six device nodes
  M_CLONE_CON,     // readlink of the tty, open_tree clone of it
  M_RO,            // mount_setattr(/, RDONLY|NOSUID, AT_RECURSIVE)
  M_ATTACH_W,      // the writable roots: mount_setattr NOSUID|NODEV + move_mount
  M_CARVE,         // the four carve-outs: clone + mount_setattr RDONLY + move_mount
  M_MASKSRC,       // fsopen/fsconfig/fsmount tmpfs, file + dir, close (no masks to place)
  M_DEV,           // tmpfs on /dev, six creat + move_mount
  M_DEVPTS,        // mkdir /dev/pts, devpts newinstance, ptmx symlink
  M_CONSOLE,       // creat /dev/console + move_mount
  M_SHM,           // mkdir /dev/shm + tmpfs
  M_DEV_RO,        // four symlinks + read-only bind remount of /dev
  M_PROC,          // mount proc
  M_PROC_RO,       // five /proc carve-outs: clone + mount_setattr + move_mount
  M_N
};
static const char* const kMarks[M_N] = {
    "",
    "make / rslave",
    "clone writable roots (2)",
    "clone /dev nodes (6)",
    "clone the tty (console)",
    "/ read-only (recursive setattr)",
    "attach writable roots (2)",
    "carve-outs (4: clone+ro+attach)",
    "mask source tmpfs (make+close)",
    "/dev tmpfs + 6 node binds",
    "/dev/pts newinstance + ptmx",
    "/dev/console bind",
    "/dev/shm tmpfs",
    "/dev links + ro remount",
    "mount proc",
    "/proc carve-outs (5)"};
#define MARK(a, m) ((a)->marks[m] = now_ms())

struct child_args {
  unsigned flags;
  int tty;  // the PTY slave
  char* const* argv;
  char* const* envp;
  int status_fd;      // status pipe, write end (pid 1 shapes)
  int init_end;       // supervisor channel: pid 1 / init's end
  int command_end;    // ... the command's end (it sends its seccomp listener here)
  int ruleset;        // Landlock ruleset, or -1
  int hold_sock;      // alt:hold-mnt: pid 1 sends its mount namespace here
  void* command_stack;
  // Child scratch (the view), as ViewPlan's mutable slots.
  int writable_fds[NWRITABLE];
  int dev_fds[NDEV];
  int console_fd;
  char console_path[64];
  char pid_text[16];
  double ts[T_N];  // --timeline
  double marks[M_N];  // --steps
  // Written by a child on failure; read by the parent after clone (CLONE_VFORK orders it).
  int err_no;
  const char* failed;
};

static struct sock_fprog g_filter;  // the seccomp filter (notify flavour)

static int g_report_failures;  // --steps: the child says why it failed (nobody reads its memory)

__attribute__((noreturn)) static void child_fail(struct child_args* a, const char* what) {
  a->err_no = errno;
  a->failed = what;
  if (g_report_failures) fprintf(stderr, "ns_breakdown: --steps: %s: %s\n", what, strerror(errno));
  _exit(127);
}
#define CHECK(a, cond, what) \
  do {                       \
    if (!(cond)) child_fail((a), (what)); \
  } while (0)

// ---- async-signal-safe helpers (as linux_sandbox.cc's) ----

static int write_file(const char* path, const char* data) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = write(fd, data, strlen(data));
  int err = n < 0 ? errno : 0;
  close(fd);
  errno = err;
  return n < 0 ? -1 : 0;
}

static int open_target(const char* path) {
  struct open_how how;
  memset(&how, 0, sizeof how);
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  return (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
}

static int clone_nofollow(const char* path, int recursive) {
  int at = open_target(path);
  if (at < 0) return -1;
  int fd = open_tree(at, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0));
  int err = errno;
  close(at);
  errno = err;
  return fd;
}

// Attach detached mount `src` at `path`; closes `src`. 0 or -1.
static int attach(int src, const char* path) {
  int target = open_target(path);
  if (target < 0) {
    int err = errno;
    close(src);
    errno = err;
    return -1;
  }
  int rc = move_mount(src, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
  int err = errno;
  close(target);
  close(src);
  errno = err;
  return rc;
}

static int set_attr(int fd, unsigned long long set, int recursive) {
  struct mount_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.attr_set = set;
  return mount_setattr(fd, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &attr, sizeof attr);
}

static void reset_dispositions(void) {
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int s = 1; s < NSIG; ++s)
    if (s != SIGKILL && s != SIGSTOP) sigaction(s, &dfl, NULL);
}

static int send_fd(int sock, int fd) {
  char byte = 'L';
  struct iovec iov = {&byte, 1};
  union {
    struct cmsghdr align;
    char buf[CMSG_SPACE(sizeof(int))];
  } u;
  memset(&u, 0, sizeof u);
  struct msghdr msg;
  memset(&msg, 0, sizeof msg);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = u.buf;
  msg.msg_controllen = sizeof u.buf;
  struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(c), &fd, sizeof fd);
  return sendmsg(sock, &msg, MSG_NOSIGNAL) < 0 ? -1 : 0;
}

static int recv_fd(int sock) {
  char byte;
  struct iovec iov = {&byte, 1};
  union {
    struct cmsghdr align;
    char buf[CMSG_SPACE(sizeof(int))];
  } u;
  struct msghdr msg;
  memset(&msg, 0, sizeof msg);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = u.buf;
  msg.msg_controllen = sizeof u.buf;
  if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) < 0) return -1;
  struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (!c || c->cmsg_type != SCM_RIGHTS) return -1;
  int fd;
  memcpy(&fd, CMSG_DATA(c), sizeof fd);
  return fd;
}

// ============================================================================================
// Landlock (policy/landlock.cc, the view flavour)
// ============================================================================================

struct ll_ruleset_attr {
  uint64_t handled_access_fs, handled_access_net, scoped;
};
struct ll_path_beneath {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));

#define LL_EXECUTE (1ULL << 0)
#define LL_WRITE_FILE (1ULL << 1)
#define LL_READ_FILE (1ULL << 2)
#define LL_READ_DIR (1ULL << 3)
#define LL_TRUNCATE (1ULL << 14)
#define LL_IOCTL_DEV (1ULL << 15)
#define LL_FILE_RIGHTS (LL_EXECUTE | LL_WRITE_FILE | LL_READ_FILE | LL_TRUNCATE | LL_IOCTL_DEV)

static uint64_t ll_all(void) {
  uint64_t r = (1ULL << 13) - 1;  // EXECUTE .. MAKE_SYM
  if (g_landlock_abi >= 2) r |= 1ULL << 13;  // REFER
  if (g_landlock_abi >= 3) r |= LL_TRUNCATE;
  if (g_landlock_abi >= 5) r |= LL_IOCTL_DEV;
  return r;
}
static uint64_t ll_dev(void) { return LL_READ_FILE | LL_WRITE_FILE | (g_landlock_abi >= 5 ? LL_IOCTL_DEV : 0); }

static int ll_add_fd(int rs, int fd, uint64_t rights, int is_dir) {
  struct ll_path_beneath pb = {rights & ll_all() & (is_dir ? ~0ULL : LL_FILE_RIGHTS), fd};
  if (pb.allowed_access == 0) return 0;
  return (int)syscall(SYS_landlock_add_rule, rs, 1 /* PATH_BENEATH */, &pb, 0);
}

static int ll_add_path(int rs, const char* path, uint64_t rights) {
  int fd = open(path, O_PATH | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? 0 : -1;
  struct stat st;
  int rc = fstat(fd, &st) < 0 ? -1 : ll_add_fd(rs, fd, rights, S_ISDIR(st.st_mode));
  close(fd);
  return rc;
}

// The manager's part, per spawn (landlock_ruleset(view=true)).
static int ll_ruleset(void) {
  struct ll_ruleset_attr attr = {ll_all(), 0, 0};
  size_t size = sizeof(uint64_t);
  if (g_landlock_abi >= 4) {
    attr.handled_access_net = 3;  // TCP bind and connect: network off
    size = 2 * sizeof(uint64_t);
  }
  if (g_landlock_abi >= 6) {
    attr.scoped = 3;  // abstract unix sockets, signals
    size = sizeof attr;
  }
  int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
  if (rs < 0) return -1;
  fcntl(rs, F_SETFD, FD_CLOEXEC);
  ll_add_path(rs, "/", LL_READ_FILE | LL_READ_DIR | LL_EXECUTE);
  for (int i = 0; i < NDEV; ++i) {
    char path[32] = "/dev/";
    strcat(path, kDevNodes[i]);
    ll_add_path(rs, path, ll_dev());
  }
  for (int i = 0; i < NWRITABLE; ++i) {
    int fd = open_target(g_writable[i]);
    if (fd >= 0) {
      ll_add_fd(rs, fd, ll_all(), 1);
      close(fd);
    }
  }
  return rs;
}

// ============================================================================================
// seccomp: policy/seccomp.cc's root, network-off, notify filter, as a linear BPF chain
// ============================================================================================

#define NOTIFY SECCOMP_RET_USER_NOTIF
#define ENOSYS_RET (SECCOMP_RET_ERRNO | ENOSYS)
#define ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i))

static struct sock_filter g_insns[256];
static unsigned short g_ninsns;

static void emit(struct sock_filter f) { g_insns[g_ninsns++] = f; }
static void ld_nr(void) { emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))); }
static void ret(unsigned action) { emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, action)); }
// nr -> action
static void rule(int nr, unsigned action) {
  emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 1));
  ret(action);
}
// nr with (arg & mask) != 0 -> action, else allow
static void rule_set(int nr, int arg, unsigned mask, unsigned action) {
  emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 4));
  emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(arg)));
  emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, mask, 0, 1));
  ret(action);
  ret(SECCOMP_RET_ALLOW);
}
// nr with arg != value -> action, else allow
static void rule_ne(int nr, int arg, unsigned value, unsigned action) {
  emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 4));
  emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(arg)));
  emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, value, 1, 0));
  ret(action);
  ret(SECCOMP_RET_ALLOW);
}
// nr with (arg_flags & O_CREAT) and (arg_mode & mask) -> action, else allow
static void rule_creat(int nr, int arg_flags, int arg_mode, unsigned mask, unsigned action) {
  emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 6));
  emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(arg_flags)));
  emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, O_CREAT, 0, 3));
  emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(arg_mode)));
  emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, mask, 0, 1));
  ret(action);
  ret(SECCOMP_RET_ALLOW);
}

static void build_filter(void) {
  const unsigned ns_bits = CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |
                           CLONE_NEWPID | CLONE_NEWNET;
  const unsigned suid = S_ISUID | S_ISGID;
  emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
  emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0));
  ret(SECCOMP_RET_KILL_PROCESS);
  ld_nr();
  emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1));  // x32
  ret(SECCOMP_RET_KILL_PROCESS);
  rule(SYS_io_uring_setup, ENOSYS_RET);
  rule(SYS_io_uring_enter, ENOSYS_RET);
  rule(SYS_io_uring_register, ENOSYS_RET);
  rule(SYS_clone3, ENOSYS_RET);
  rule(SYS_openat2, ENOSYS_RET);
  static const int deny[] = {SYS_setns, SYS_ptrace, SYS_process_vm_readv, SYS_process_vm_writev, SYS_mount,
                             SYS_umount2, SYS_pivot_root, SYS_open_tree, SYS_move_mount, SYS_fsopen,
                             SYS_fsconfig, SYS_fsmount, SYS_fspick, SYS_mount_setattr, SYS_keyctl,
                             SYS_add_key, SYS_request_key, SYS_bpf, SYS_perf_event_open, SYS_userfaultfd,
                             SYS_kexec_load, SYS_kexec_file_load, SYS_init_module, SYS_finit_module,
                             SYS_delete_module, SYS_open_by_handle_at};
  for (size_t i = 0; i < sizeof deny / sizeof deny[0]; ++i) rule(deny[i], NOTIFY);
  rule_set(SYS_unshare, 0, ns_bits | 0x80 /* CLONE_NEWTIME */, NOTIFY);
  rule_set(SYS_clone, 0, ns_bits, NOTIFY);
  // ioctl TIOCSTI / TIOCLINUX
  emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ioctl, 0, 5));
  emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(1)));
  emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCSTI, 1, 0));
  emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCLINUX, 0, 1));
  ret(NOTIFY);
  ret(SECCOMP_RET_ALLOW);
  rule_ne(SYS_socket, 0, AF_UNIX, NOTIFY);
  rule_ne(SYS_socketpair, 0, AF_UNIX, NOTIFY);
  rule_set(SYS_chmod, 1, suid, NOTIFY);
  rule_set(SYS_fchmod, 1, suid, NOTIFY);
  rule_set(SYS_fchmodat, 2, suid, NOTIFY);
  rule_set(452 /* fchmodat2 */, 2, suid, NOTIFY);
  rule_creat(SYS_open, 1, 2, suid, NOTIFY);
  rule_creat(SYS_openat, 2, 3, suid, NOTIFY);
  rule_set(SYS_creat, 1, suid, NOTIFY);
  rule_set(SYS_mknod, 1, suid, NOTIFY);
  rule_set(SYS_mknodat, 2, suid, NOTIFY);
  ret(SECCOMP_RET_ALLOW);
  g_filter.len = g_ninsns;
  g_filter.filter = g_insns;
}

// ============================================================================================
// The child steps
// ============================================================================================

// The maps are made in the manager (in the new namespace, before they are written, the child's
// own ids read as the overflow id).
static char g_uid_map[64], g_gid_map[64];

static void step_maps(struct child_args* a) {
  CHECK(a, write_file("/proc/self/setgroups", "deny") == 0, "setgroups");
  CHECK(a, write_file("/proc/self/uid_map", g_uid_map) == 0, "uid_map");
  CHECK(a, write_file("/proc/self/gid_map", g_gid_map) == 0, "gid_map");
}

// linux_sandbox.cc's step_view, every part behind its flag, in the code's order.
static void step_view(struct child_args* a) {
  const unsigned f = a->flags;
  MARK(a, M_START);
  if (f & F_SLAVE) CHECK(a, mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) == 0, "/ (make slave)");
  MARK(a, M_SLAVE);
  if (f & F_WRITABLE)
    for (int i = 0; i < NWRITABLE; ++i) {
      a->writable_fds[i] = clone_nofollow(g_writable[i], 1);
      CHECK(a, a->writable_fds[i] >= 0, "clone writable root");
    }
  MARK(a, M_CLONE_W);
  if (f & F_DEV)
    for (int i = 0; i < NDEV; ++i) {
      char path[32] = "/dev/";
      strcat(path, kDevNodes[i]);
      a->dev_fds[i] = open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    }
  MARK(a, M_CLONE_DEV);
  if ((f & F_CONSOLE) && a->tty >= 0) {
    char link[32];
    snprintf(link, sizeof link, "/proc/self/fd/%d", a->tty);  // (uexec: a hand-rolled itoa)
    ssize_t got = readlink(link, a->console_path, sizeof a->console_path - 1);
    if (got > 0) {
      a->console_path[got] = '\0';
      a->console_fd = open_tree(AT_FDCWD, a->console_path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    }
  }
  MARK(a, M_CLONE_CON);
  if (f & F_RO) {
    struct mount_attr ro;
    memset(&ro, 0, sizeof ro);
    ro.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID;
    CHECK(a, mount_setattr(AT_FDCWD, "/", AT_RECURSIVE, &ro, sizeof ro) == 0, "/ (read-only)");
  }
  MARK(a, M_RO);
  if (f & F_WRITABLE)
    for (int i = 0; i < NWRITABLE; ++i) {
      int fd = a->writable_fds[i];
      CHECK(a, set_attr(fd, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 1) == 0, "writable: setattr");
      CHECK(a, attach(fd, g_writable[i]) == 0, "writable: attach");
    }
  MARK(a, M_ATTACH_W);
  // (pins: none for this policy)
  if (f & F_CARVE)
    for (int i = 0; i < NSTUBS; ++i) {
      int fd = clone_nofollow(g_stub_paths[i], 1);
      CHECK(a, fd >= 0, "carve-out: clone");
      CHECK(a, set_attr(fd, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 1) == 0, "carve-out: setattr");
      CHECK(a, attach(fd, g_stub_paths[i]) == 0, "carve-out: attach");
    }
  MARK(a, M_CARVE);
  if (f & F_MASKSRC) {
    int fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
    CHECK(a, fs >= 0, "fsopen tmpfs");
    CHECK(a, fsconfig(fs, FSCONFIG_SET_STRING, "size", "4k", 0) == 0, "fsconfig size");
    CHECK(a, fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0, "fsconfig create");
    int mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
    close(fs);
    CHECK(a, mnt >= 0, "fsmount");
    int file = openat(mnt, "f", O_CREAT | O_WRONLY | O_CLOEXEC, 0);
    CHECK(a, file >= 0 && fchmod(file, 0) == 0 && mkdirat(mnt, "d", 0) == 0, "mask files");
    close(file);
    // (no masks to place on this host: uexec clones "f" or "d" over each, like a carve-out)
    close(mnt);
  }
  MARK(a, M_MASKSRC);
  if (f & F_DEV) {
    CHECK(a, mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k") == 0, "/dev tmpfs");
    for (int i = 0; i < NDEV; ++i) {
      if (a->dev_fds[i] < 0) continue;
      char path[32] = "/dev/";
      strcat(path, kDevNodes[i]);
      int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0666);
      CHECK(a, fd >= 0, "/dev node");
      close(fd);
      int src = a->dev_fds[i];
      a->dev_fds[i] = -1;
      CHECK(a, attach(src, path) == 0, "/dev node attach");
    }
    MARK(a, M_DEV);
    if (f & F_DEVPTS) {
      CHECK(a, mkdir("/dev/pts", 0755) == 0, "mkdir /dev/pts");
      CHECK(a, mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620") == 0,
            "/dev/pts");
      CHECK(a, symlink("pts/ptmx", "/dev/ptmx") == 0, "/dev/ptmx");
    }
    MARK(a, M_DEVPTS);
    if ((f & F_CONSOLE) && a->console_fd >= 0) {
      int fd = open("/dev/console", O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
      CHECK(a, fd >= 0, "/dev/console");
      close(fd);
      int src = a->console_fd;
      a->console_fd = -1;
      CHECK(a, attach(src, "/dev/console") == 0, "/dev/console attach");
    }
    MARK(a, M_CONSOLE);
    if (f & F_SHM) {
      CHECK(a, mkdir("/dev/shm", 01777) == 0, "mkdir /dev/shm");
      CHECK(a, mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=256m") == 0, "/dev/shm");
    }
    MARK(a, M_SHM);
    CHECK(a, symlink("/proc/self/fd", "/dev/fd") == 0 && symlink("/proc/self/fd/0", "/dev/stdin") == 0 &&
                 symlink("/proc/self/fd/1", "/dev/stdout") == 0 && symlink("/proc/self/fd/2", "/dev/stderr") == 0,
          "/dev links");
    CHECK(a, mount(NULL, "/dev", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC, NULL) == 0,
          "/dev read-only");
    MARK(a, M_DEV_RO);
  }
  if (f & F_PROC) CHECK(a, mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == 0, "/proc");
  MARK(a, M_PROC);
  if (f & F_PROCRO) {
    static const char* const knobs[] = {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"};
    for (int i = 0; i < 5; ++i) {
      int fd = clone_nofollow(knobs[i], 1);
      if (fd < 0 && errno == ENOENT) continue;
      CHECK(a, fd >= 0, "proc knob: clone");
      CHECK(a, set_attr(fd, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, 1) == 0,
            "proc knob: setattr");
      CHECK(a, attach(fd, knobs[i]) == 0, "proc knob: attach");
    }
  }
  MARK(a, M_PROC_RO);
}

// pid 1's Landlock view rules (landlock_add_view_rules).
static void step_landlock_view(struct child_args* a) {
  int rs = a->ruleset;
  CHECK(a, ll_add_path(rs, "/proc", LL_READ_FILE | LL_READ_DIR | LL_WRITE_FILE) == 0, "landlock /proc");
  CHECK(a, ll_add_path(rs, "/dev/pts", ll_dev()) == 0, "landlock /dev/pts");
  CHECK(a, ll_add_path(rs, "/dev/ptmx", ll_dev()) == 0, "landlock /dev/ptmx");
  CHECK(a, ll_add_path(rs, "/dev/shm", ll_all()) == 0, "landlock /dev/shm");
  CHECK(a, ll_add_fd(rs, a->tty, ll_dev(), 0) == 0, "landlock tty");
}

// The command's step_privileges.
static void step_privileges(struct child_args* a) {
  CHECK(a, prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, "no_new_privs");
  struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2];
  memset(data, 0, sizeof data);
  if (syscall(SYS_capget, &hdr, data) == 0 && (data[0].effective & (1U << CAP_SETPCAP))) {
    CHECK(a,
          prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                                       SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
                                       SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED) == 0,
          "securebits");
    for (int cap = 0; cap <= g_last_cap; ++cap)
      if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL) child_fail(a, "capbset drop");
  }
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  struct __user_cap_data_struct none[2];
  memset(none, 0, sizeof none);
  hdr.version = _LINUX_CAPABILITY_VERSION_3;
  hdr.pid = 0;
  CHECK(a, syscall(SYS_capset, &hdr, none) == 0, "capset");
}

// spawn.cc's keep_init_capabilities (pid 1, when init gets the supervisor channel).
static void keep_init_capabilities(void) {
  struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2];
  memset(data, 0, sizeof data);
  if (syscall(SYS_capget, &hdr, data) != 0) return;
  const int caps[] = {CAP_SYS_ADMIN, CAP_SYS_PTRACE};
  for (int i = 0; i < 2; ++i) data[caps[i] / 32].inheritable |= data[caps[i] / 32].permitted & (1U << (caps[i] % 32));
  hdr.version = _LINUX_CAPABILITY_VERSION_3;
  hdr.pid = 0;
  if (syscall(SYS_capset, &hdr, data) != 0) return;
  for (int i = 0; i < 2; ++i) prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, caps[i], 0, 0);
}

// The command's process (spawn.cc's child_main). Also the whole child of the variants without
// a pid namespace, which first run the setup steps themselves.
static int command_main(void* raw) {
  struct child_args* a = raw;
  STAMP(a, T_CMD);
  reset_dispositions();
  CHECK(a, setsid() >= 0, "setsid");
  CHECK(a, ioctl(a->tty, TIOCSCTTY, 0) == 0, "TIOCSCTTY");
  for (int fd = 0; fd < 3; ++fd) CHECK(a, dup2(a->tty, fd) == fd, "dup2 tty");
  CHECK(a, chdir(g_workspace) == 0, "chdir");
  if (a->flags & F_CAPS) step_privileges(a);
  if (a->flags & F_LANDLOCK) {
    CHECK(a, ll_add_fd(a->ruleset, a->tty, ll_dev(), 0) == 0, "landlock tty");
    CHECK(a, syscall(SYS_landlock_restrict_self, a->ruleset, 0) == 0, "landlock_restrict_self");
  }
  if (a->flags & F_SECCOMP) {
    long listener = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &g_filter);
    CHECK(a, listener >= 0, "seccomp");
    CHECK(a, send_fd(a->command_end, (int)listener) == 0, "send listener");
    close((int)listener);
  }
  syscall(SYS_close_range, 3, ~0U, 0);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  STAMP(a, T_CMD_EXEC);
  execve("/bin/echo", a->argv, a->envp);
  child_fail(a, "execve /bin/echo");
}

// Variants with a user and/or mount namespace but no pid namespace: the setup steps, then
// the command, in one process.
static int single_main(void* raw) {
  struct child_args* a = raw;
  STAMP(a, T_CHILD);
  if (a->flags & F_USER) step_maps(a);
  return command_main(a);
}

static void init_signals(void);
static void make_mask_source(void);
__attribute__((noreturn)) static void init_loop(pid_t command, int listener, int status_fd);

// alt:cmd-pid1: the command itself is pid 1 (no init; bwrap's --as-pid-1): the setup steps,
// then the command's steps and its exec, in the one process.
static int pid1_command_main(void* raw) {
  struct child_args* a = raw;
  STAMP(a, T_CHILD);
  reset_dispositions();
  CHECK(a, prctl(PR_SET_PDEATHSIG, SIGKILL) == 0, "PDEATHSIG");
  if (a->flags & F_USER) step_maps(a);
  STAMP(a, T_MAPS);
  if (a->flags & F_ANY_VIEW) step_view(a);
  STAMP(a, T_VIEW);
  if (a->flags & F_LANDLOCK) step_landlock_view(a);
  STAMP(a, T_SETUP);
  return command_main(a);  // setsid, tty, privileges, Landlock, seccomp (listener to the manager), exec
}

// pid 1 (spawn.cc's pid1_main).
static int pid1_main(void* raw) {
  struct child_args* a = raw;
  STAMP(a, T_CHILD);
  reset_dispositions();
  CHECK(a, setsid() >= 0, "setsid");
  CHECK(a, prctl(PR_SET_PDEATHSIG, SIGKILL) == 0, "PDEATHSIG");
  if (a->flags & F_USER) step_maps(a);
  STAMP(a, T_MAPS);
  if (a->flags & F_ANY_VIEW) step_view(a);
  STAMP(a, T_VIEW);
  if (a->flags & F_LANDLOCK) step_landlock_view(a);
  STAMP(a, T_SETUP);
  if (a->flags & X_HOLD_MNT) {  // (the manager cannot open /proc/PID/ns/mnt itself: init may be gone)
    int ns = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
    CHECK(a, ns >= 0 && send_fd(a->hold_sock, ns) == 0, "send ns/mnt");
    close(ns);
  }
  pid_t cmd = clone(command_main, a->command_stack, CLONE_VM | CLONE_VFORK | SIGCHLD, a);
  CHECK(a, cmd > 0, "clone command");
  STAMP(a, T_PID1_RESUMED);
  if (a->failed) _exit(127);
  int init = fcntl(g_init_fd, F_DUPFD_CLOEXEC, 10);
  int status = fcntl(a->status_fd, F_DUPFD_CLOEXEC, 10);
  int channel = (a->flags & F_SUPER) ? fcntl(a->init_end, F_DUPFD_CLOEXEC, 10) : -1;
  CHECK(a, init >= 0 && status >= 0 && (!(a->flags & F_SUPER) || channel >= 0), "dup init fds");
  int listener = -1;
  if (channel >= 0 && (a->flags & F_SECCOMP)) {  // (uexec always waits for it: it always sends one)
    int fd = recv_fd(channel);
    if (fd >= 0) {
      listener = fcntl(fd, F_DUPFD_CLOEXEC, 10);
      close(fd);
    }
  }
  if (a->flags & X_INIT_NOEXEC) {
    // Measurement only: stay pid 1 in this process (it shares the manager's memory: CLONE_VM
    // without CLONE_VFORK) instead of exec'ing init. What exec'ing init costs the spawn.
    close(a->tty);  // (exec would have closed it: the output's EOF must not wait for us)
    if (channel >= 0) make_mask_source();  // as init does with a control channel
    init_signals();
    init_loop(cmd, listener, status);
  }
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  CHECK(a, null >= 0, "open /dev/null");
  for (int fd = 0; fd < 3; ++fd) CHECK(a, dup2(null, fd) == fd, "dup2 /dev/null");
  CHECK(a, dup2(status, 3) == 3, "dup2 status");
  if (listener >= 0)
    CHECK(a, dup2(listener, 4) == 4, "dup2 listener");
  else
    close(4);
  if (channel >= 0)
    CHECK(a, dup2(channel, 5) == 5, "dup2 channel");
  else
    close(5);
  syscall(SYS_close_range, 6, ~0U, CLOSE_RANGE_CLOEXEC);
  snprintf(a->pid_text, sizeof a->pid_text, "%d", (int)cmd);
  char name_uexec[] = "uexec-init", name_self[] = "ns-breakdown-init";
  char listener_fd[] = "4", control_fd[] = "5", dash[] = "-";
  char* init_argv[] = {g_self_init ? name_self : name_uexec, a->pid_text, listener >= 0 ? listener_fd : dash,
                       channel >= 0 ? control_fd : dash, NULL};
  char* init_envp[] = {NULL};
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  if (channel >= 0) keep_init_capabilities();
  STAMP(a, T_INIT_EXEC);
  syscall(SYS_execveat, init, "", init_argv, init_envp, AT_EMPTY_PATH);
  int err = errno;
  kill(cmd, SIGKILL);
  errno = err;
  child_fail(a, "execveat init");
}

// ============================================================================================
// A minimal init (used when build/src/uexec-init is not found): uexec-init's main, without
// the mask requests and the bwrap mode.
// ============================================================================================

static volatile pid_t g_command = 0;
static void forward(int sig) {
  if (kill(-g_command, sig) < 0) kill(g_command, sig);
}
static void on_child(int sig) { (void)sig; }
static sigset_t g_waiting;  // the mask inside ppoll: SIGCHLD unblocked

// uexec-init's signal setup: forward the usual signals to the command's process group;
// SIGCHLD blocked except inside ppoll.
static void init_signals(void) {
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  static const int forwarded[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM, SIGCONT, SIGWINCH, SIGPIPE};
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = forward;
  sa.sa_flags = SA_RESTART;
  for (unsigned i = 0; i < sizeof forwarded / sizeof forwarded[0]; ++i) sigaction(forwarded[i], &sa, 0);
  sa.sa_handler = on_child;
  sa.sa_flags = 0;
  sigaction(SIGCHLD, &sa, 0);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, &g_waiting);
  sigdelset(&g_waiting, SIGCHLD);
}

// uexec-init's loop: reap until the command is gone, answer seccomp notifications (EPERM),
// then its status record on `status_fd` and exit.
static void init_loop(pid_t command, int listener, int status_fd) {
  g_command = command;
  for (;;) {
    int status = 0;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
      if (pid == command) {
        int32_t rec[12] = {0x54415453 /* "STAT" */, 0, 0, 0, 0, status};
        (void)!write(status_fd, rec, sizeof rec);
        _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
      }
    if (pid < 0 && errno == ECHILD) _exit(125);
    struct pollfd p[1] = {{listener, POLLIN, 0}};
    int n = ppoll(listener >= 0 ? p : NULL, listener >= 0 ? 1 : 0, NULL, &g_waiting);
    if (n > 0 && (p[0].revents & POLLIN)) {  // deny and forget (uexec-init also counts)
      struct seccomp_notif req;
      struct seccomp_notif_resp resp;
      memset(&req, 0, sizeof req);
      if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) == 0) {
        memset(&resp, 0, sizeof resp);
        resp.id = req.id;
        resp.error = -EPERM;
        ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
      }
    }
    if (n > 0 && (p[0].revents & (POLLHUP | POLLERR | POLLNVAL))) listener = -1;
  }
}

// uexec-init's make_mask_source: a detached 4k tmpfs with an empty mode-000 file and directory,
// kept open (and so mounted) until init exits.
static void make_mask_source(void) {
  int fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
  if (fs < 0) return;
  int mnt = -1;
  if (fsconfig(fs, FSCONFIG_SET_STRING, "size", "4k", 0) == 0 && fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0)
    mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
  close(fs);
  if (mnt < 0) return;
  int f = openat(mnt, "f", O_CREAT | O_WRONLY | O_CLOEXEC, 0);
  if (f >= 0) {
    fchmod(f, 0);
    close(f);
  }
  mkdirat(mnt, "d", 0);
}

// The init exec'd when no build/src/uexec-init is at hand: uexec-init's main without the
// late masks' handling (it makes their source, as uexec-init does with a control channel)
// and without the bwrap mode.
static int mini_init(int argc, char** argv) {
  if (argc < 4) return 125;
  int listener = argv[2][0] != '-' ? atoi(argv[2]) : -1;
  int control = argv[3][0] != '-' ? atoi(argv[3]) : -1;
  if (control >= 0) make_mask_source();
  init_signals();
  init_loop(atoi(argv[1]), listener, 3);
}

// ============================================================================================
// The manager's side: one timed sample
// ============================================================================================

static void die(const char* what) {
  fprintf(stderr, "ns_breakdown: %s: %s\n", what, strerror(errno));
  exit(1);
}

#define STACK_SIZE (64 * 1024)
static void* make_stack(void) {
  char* p = mmap(NULL, STACK_SIZE + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (p == MAP_FAILED) die("mmap stack");
  mprotect(p, 4096, PROT_NONE);
  return p + 4096 + STACK_SIZE;
}
static void* g_stack;
static void* g_command_stack;

struct sample {
  double total, tail, deferred;
  double ts[T_N];  // relative to the start, ms (0: not reached by this variant)
};

static int run_one(const struct variant* v, struct sample* out) {
  const unsigned f = v->flags;
  char echo[] = "echo", x[] = "x";
  char* argv[] = {echo, x, NULL};
  char path_env[] = "PATH=/usr/local/bin:/usr/bin:/bin", term_env[] = "TERM=xterm-256color";
  char* envp[] = {path_env, term_env, NULL};
  int pool_net = -1;
  if (f & X_NET_POOL) {
    // Untimed: a pool would have made this one in the background.
    if (unshare(CLONE_NEWNET) < 0) die("unshare(CLONE_NEWNET) for the pool");
    pool_net = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (pool_net < 0 || setns(g_host_net, CLONE_NEWNET) < 0) die("pool netns");
  }

  double t0 = now_ms();
  struct child_args a;
  memset(&a, 0, sizeof a);
  a.flags = f;
  a.argv = argv;
  a.envp = envp;
  a.status_fd = a.init_end = a.command_end = a.ruleset = a.console_fd = a.hold_sock = -1;
  for (int i = 0; i < NWRITABLE; ++i) a.writable_fds[i] = -1;
  for (int i = 0; i < NDEV; ++i) a.dev_fds[i] = -1;
  a.command_stack = g_command_stack;

  // Per-spawn planning that uexec does in the manager (the parts that are syscalls).
  int sp[2] = {-1, -1};
  if (f & F_SUPER) {
    if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp) < 0) die("socketpair");
    a.command_end = sp[0];
    a.init_end = sp[1];
  }
  int hold[2] = {-1, -1};
  if (f & X_HOLD_MNT) {
    if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, hold) < 0) die("socketpair");
    a.hold_sock = hold[1];
  }
  if (f & F_LANDLOCK) {
    a.ruleset = ll_ruleset();
    if (a.ruleset < 0) die("landlock ruleset");
  }
  // The session's PTY.
  int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  char slave_name[64];
  if (master < 0 || grantpt(master) || unlockpt(master) || ptsname_r(master, slave_name, sizeof slave_name))
    die("posix_openpt");
  a.tty = open(slave_name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (a.tty < 0) die("open slave");
  int status_pipe[2] = {-1, -1};
  if ((f & F_PID) && !(f & X_CMD_PID1)) {
    if (pipe2(status_pipe, O_CLOEXEC) < 0) die("pipe2");
    a.status_fd = status_pipe[1];
  }

  int flags = CLONE_VM | CLONE_PIDFD | SIGCHLD | ((f & X_INIT_NOEXEC) ? 0 : CLONE_VFORK);
  if (f & F_USER) flags |= CLONE_NEWUSER;
  if (f & F_MNT) flags |= CLONE_NEWNS;
  if (f & F_PID) flags |= CLONE_NEWPID;
  if (f & F_IPC) flags |= CLONE_NEWIPC;
  if (f & F_NET) flags |= CLONE_NEWNET;
  if (f & X_UTS) flags |= CLONE_NEWUTS;
  if (f & X_CGROUP) flags |= CLONE_NEWCGROUP;
  int (*entry)(void*) = (f & X_CMD_PID1)           ? pid1_command_main
                        : (f & F_PID)              ? pid1_main
                        : (f & (F_USER | F_MNT))   ? single_main
                                                   : command_main;

  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, &old);
  if (f & X_NET_SHARED) setns(g_shared_net, CLONE_NEWNET);
  if (f & X_NET_POOL) setns(pool_net, CLONE_NEWNET);
  int pidfd = -1;
  STAMP(&a, T_PLANNED);
  pid_t pid = clone(entry, g_stack, flags, &a, &pidfd);
  int clone_errno = errno;
  STAMP(&a, T_RESUMED);
  if (f & (X_NET_SHARED | X_NET_POOL)) setns(g_host_net, CLONE_NEWNET);
  sigprocmask(SIG_SETMASK, &old, NULL);
  if (pool_net >= 0) close(pool_net);
  close(a.tty);
  if (status_pipe[1] >= 0) close(status_pipe[1]);
  if (pid < 0) {
    errno = clone_errno;
    die("clone");
  }
  if (a.failed) {
    waitpid(pid, NULL, 0);
    fprintf(stderr, "ns_breakdown: %s: the child failed at %s: %s\n", v->name, a.failed, strerror(a.err_no));
    exit(1);
  }
  int held = -1;
  if (f & X_HOLD_MNT) {
    held = recv_fd(hold[0]);
    if (held < 0) die("receive ns/mnt");
    close(hold[0]);
    close(hold[1]);
  }
  if (a.ruleset >= 0) close(a.ruleset);
  // alt:cmd-pid1: no init to take the seccomp listener; the manager does (as for Landlock-only).
  int manager_listener = -1;
  if ((f & X_CMD_PID1) && (f & F_SECCOMP)) manager_listener = recv_fd(a.init_end);

  // The output, to EOF: EIO once no slave is open any more.
  char buf[256];
  size_t got = 0;
  for (;;) {
    ssize_t n = read(master, buf + got, sizeof buf - 1 - got);
    if (n > 0) {
      got += (size_t)n;
      if (got == sizeof buf - 1) got = 0;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  double t_eof = now_ms();
  a.ts[T_EOF] = t_eof;
  buf[got] = '\0';
  char records[256];
  if (status_pipe[0] >= 0 && read(status_pipe[0], records, sizeof records) > 0)  // init reaped the command
    STAMP(&a, T_STATUS);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  double t_reap = now_ms();
  a.ts[T_REAPED] = t_reap;
  if (status_pipe[0] >= 0) {  // the rest of init's records, to EOF
    while (read(status_pipe[0], records, sizeof records) > 0) {
    }
    close(status_pipe[0]);
  }
  close(master);
  if (pidfd >= 0) close(pidfd);
  if (manager_listener >= 0) close(manager_listener);
  if (sp[0] >= 0) {
    close(sp[0]);
    close(sp[1]);
  }
  double t1 = now_ms();
  out->total = t1 - t0;
  out->tail = t_reap - t_eof;
  for (int i = 0; i < T_N; ++i) out->ts[i] = a.ts[i] > 0 ? a.ts[i] - t0 : 0;
  out->deferred = 0;
  if (held >= 0) {
    double tc = now_ms();
    close(held);
    out->deferred = now_ms() - tc;
  }
  if (a.failed) {  // (only without CLONE_VFORK: otherwise caught right after clone)
    fprintf(stderr, "ns_breakdown: %s: the child failed at %s: %s\n", v->name, a.failed, strerror(a.err_no));
    exit(1);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !strchr(buf, 'x')) {
    fprintf(stderr, "ns_breakdown: %s: bad run (status 0x%x, output \"%s\")\n", v->name, status, buf);
    return -1;
  }
  return 0;
}

// ============================================================================================
// Setup, statistics, report
// ============================================================================================

static char g_cleanup_dir[256];
static void cleanup(void) {
  if (!g_cleanup_dir[0]) return;
  for (int i = 0; i < NSTUBS; ++i) rmdir(g_stub_paths[i]);
  rmdir(g_cleanup_dir);
}

static void setup_workspace(const char* parent) {
  snprintf(g_workspace, sizeof g_workspace, "%s/ns_breakdown.XXXXXX", parent);
  if (!mkdtemp(g_workspace)) die("mkdtemp");
  snprintf(g_cleanup_dir, sizeof g_cleanup_dir, "%s", g_workspace);
  atexit(cleanup);
  for (int i = 0; i < NSTUBS; ++i) {
    snprintf(g_stub_paths[i], sizeof g_stub_paths[i], "%s/%s", g_workspace, kStubs[i]);
    if (mkdir(g_stub_paths[i], 0755) < 0) die("mkdir stub");
  }
  g_writable[0] = g_workspace;
  g_writable[1] = "/tmp";
}

// The init program into a sealed memfd, as linux_sandbox.cc's init_fd().
static void setup_init(const char* path) {
  int src = -1;
  if (path) {
    src = open(path, O_RDONLY | O_CLOEXEC);
    if (src < 0) die(path);
    g_init_name = path;
  } else if ((src = open("build/src/uexec-init", O_RDONLY | O_CLOEXEC)) >= 0) {
    g_init_name = "build/src/uexec-init";
  } else {
    src = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    if (src < 0) die("/proc/self/exe");
    g_init_name = "this program as init (no build/src/uexec-init here; --init PATH)";
    g_self_init = 1;
  }
  g_init_fd = (int)syscall(SYS_memfd_create, "uexec-init", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (g_init_fd < 0) die("memfd_create");
  char buf[65536];
  ssize_t n;
  while ((n = read(src, buf, sizeof buf)) > 0)
    if (write(g_init_fd, buf, (size_t)n) != n) die("copy init");
  close(src);
  fchmod(g_init_fd, 0555);
  fcntl(g_init_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}
static double median(const double* v, int n) {
  if (n == 0) return 0;
  double* c = malloc(sizeof(double) * (size_t)n);
  memcpy(c, v, sizeof(double) * (size_t)n);
  qsort(c, (size_t)n, sizeof *c, cmp_double);
  double m = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
  free(c);
  return m;
}
static double minv(const double* v, int n) {
  double m = v[0];
  for (int i = 1; i < n; ++i) m = v[i] < m ? v[i] : m;
  return m;
}
static double maxv(const double* v, int n) {
  double m = v[0];
  for (int i = 1; i < n; ++i) m = v[i] > m ? v[i] : m;
  return m;
}

// Whole-machine busy time so far, ms (all CPUs; user+nice+system+irq+softirq; not steal, the
// time a hypervisor gave to someone else).
static double busy_ms(void) {
  FILE* f = fopen("/proc/stat", "r");
  if (!f) return 0;
  unsigned long long u, n, s, idle, io, irq, sirq, steal;
  int ok = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &u, &n, &s, &idle, &io, &irq, &sirq, &steal);
  fclose(f);
  if (ok != 8) return 0;
  (void)steal;
  return (double)(u + n + s + irq + sirq) * 1000.0 / (double)sysconf(_SC_CLK_TCK);
}

// --steps K: the mount view's steps timed one by one, without the noise of whole spawns. One
// process (a fork, not sharing our memory) is made with the sandbox's namespaces; as pid 1 it
// writes its maps, keeps its first mount namespace (a copy of the host's) and then K times:
// setns() back into that copy (releasing the previous view: its umount and RCU grace period),
// unshare(CLONE_NEWNS) (a fresh copy, as clone does for a spawn) and step_view with every step,
// stamped between groups. Then K unshare()s of each other namespace type (each new one
// replacing the previous, whose release may be deferred by the kernel).
static double g_host_mounts;
static int g_steps_k;  // --steps K

// --steps: one command's steps, timed; the four durations go back in a->marks[0..3].
static int command_steps_main(void* raw) {
  struct child_args* a = raw;
  double t0 = now_ms();
  a->ruleset = ll_ruleset();
  double t1 = now_ms();
  step_privileges(a);
  double t2 = now_ms();
  CHECK(a, a->ruleset >= 0 && syscall(SYS_landlock_restrict_self, a->ruleset, 0) == 0, "landlock_restrict_self");
  double t3 = now_ms();
  long listener = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &g_filter);
  double t4 = now_ms();
  CHECK(a, listener >= 0, "seccomp");
  a->marks[0] = t1 - t0;
  a->marks[1] = t2 - t1;
  a->marks[2] = t3 - t2;
  a->marks[3] = t4 - t3;
  _exit(0);
}

static int steps_main(void* raw) {
  struct child_args* a = raw;
  const int k = g_steps_k;
  g_report_failures = 1;
  step_maps(a);
  int pristine = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
  CHECK(a, pristine >= 0, "open ns/mnt");
  enum { R_RELEASE = M_N, R_COPY, R_VIEW, R_N };
  double* d[R_N];
  for (int m = 0; m < R_N; ++m) d[m] = calloc((size_t)k, sizeof(double));
  for (int i = 0; i < k; ++i) {
    double t0 = now_ms();
    CHECK(a, setns(pristine, CLONE_NEWNS) == 0, "setns back to the first copy");
    double t1 = now_ms();
    CHECK(a, unshare(CLONE_NEWNS) == 0, "unshare(CLONE_NEWNS)");
    double t2 = now_ms();
    for (int j = 0; j < NWRITABLE; ++j) a->writable_fds[j] = -1;
    for (int j = 0; j < NDEV; ++j) a->dev_fds[j] = -1;
    a->console_fd = -1;
    step_view(a);
    d[R_RELEASE][i] = t1 - t0;
    d[R_COPY][i] = t2 - t1;
    for (int m = 1; m < M_N; ++m) d[m][i] = a->marks[m] - a->marks[m - 1];
    d[R_VIEW][i] = a->marks[M_N - 1] - a->marks[M_START];
  }
  printf("steps: each mount step of the view timed in place (%d iterations, median us; pid 1 of a user,\n"
         "mount, pid, ipc and net namespace, %.0f host mounts)\n", k, g_host_mounts);
  printf("  %-44s %8.1f\n", "release of the previous view (setns away)", 1e3 * median(d[R_RELEASE] + 1, k - 1));
  printf("  %-44s %8.1f\n", "unshare(CLONE_NEWNS): copy of the host's", 1e3 * median(d[R_COPY], k));
  for (int m = 1; m < M_N; ++m) printf("  %-44s %8.1f\n", kMarks[m], 1e3 * median(d[m], k));
  printf("  %-44s %8.1f\n", "= the whole view (step_view)", 1e3 * median(d[R_VIEW], k));
  static const struct {
    int flag;
    const char* name;
  } kinds[] = {{CLONE_NEWNET, "unshare(CLONE_NEWNET)"}, {CLONE_NEWIPC, "unshare(CLONE_NEWIPC)"},
               {CLONE_NEWUTS, "unshare(CLONE_NEWUTS)"}, {CLONE_NEWCGROUP, "unshare(CLONE_NEWCGROUP)"}};
  for (size_t j = 0; j < sizeof kinds / sizeof kinds[0]; ++j) {
    for (int i = 0; i < k; ++i) {
      double t0 = now_ms();
      CHECK(a, unshare(kinds[j].flag) == 0, kinds[j].name);
      d[0][i] = now_ms() - t0;
    }
    printf("  %-44s %8.1f\n", kinds[j].name, 1e3 * median(d[0], k));
  }
  // The command's steps, each in a fresh child of this pid 1 (they cannot be undone), cloned
  // as spawn.cc does (CLONE_VM|CLONE_VFORK: no copy-on-write faults in the timed span).
  enum { C_RULESET, C_PRIV, C_RESTRICT, C_SECCOMP, C_N };
  static const char* const kCmd[C_N] = {"landlock ruleset (manager: create + 9 rules)", "command: step_privileges",
                                        "command: landlock_restrict_self", "command: seccomp load + NEW_LISTENER"};
  for (int i = 0; i < k; ++i) {
    pid_t pid = clone(command_steps_main, g_command_stack, CLONE_VM | CLONE_VFORK | SIGCHLD, a);
    CHECK(a, pid > 0, "clone");
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(a, WIFEXITED(st) && WEXITSTATUS(st) == 0, "command steps child");
    for (int c = 0; c < C_N; ++c) d[c][i] = a->marks[c];
  }
  for (int c = 0; c < C_N; ++c) printf("  %-44s %8.1f\n", kCmd[c], 1e3 * median(d[c], k));
  fflush(stdout);
  _exit(0);
}

static void run_steps(int k) {
  struct child_args a;
  memset(&a, 0, sizeof a);
  a.flags = F_SLAVE | F_RO | F_WRITABLE | F_CARVE | F_MASKSRC | F_DEV | F_DEVPTS | F_CONSOLE | F_SHM | F_PROC | F_PROCRO;
  g_steps_k = k < 3 ? 3 : k;
  int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  char name[64];
  if (master < 0 || grantpt(master) || unlockpt(master) || ptsname_r(master, name, sizeof name)) die("posix_openpt");
  a.tty = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (a.tty < 0) die("open slave");
  fflush(stdout);
  pid_t pid = clone(steps_main, g_stack,
                    CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNET | SIGCHLD, &a);
  if (pid < 0) die("clone (--steps)");
  int status = 0;
  waitpid(pid, &status, 0);
  close(a.tty);
  close(master);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "ns_breakdown: --steps failed (status 0x%x)\n", status);
    exit(1);
  }
}

// --timeline K: K more samples of base, the whole sandbox and the init alternatives
// (interleaved), and the median moment of each point of the spawn, ms after the start.
static void print_timeline(const struct variant* vs, int nv, int full, int k) {
  const struct variant* sel[4];
  int ns = 0;
  sel[ns++] = &vs[0];
  sel[ns++] = &vs[full];
  for (int i = full + 1; i < nv; ++i)
    if (vs[i].flags & (X_INIT_NOEXEC | X_CMD_PID1)) sel[ns++] = &vs[i];
  double* at[4][T_N];
  int n[4][T_N];
  for (int j = 0; j < ns; ++j)
    for (int t = 0; t < T_N; ++t) {
      at[j][t] = calloc((size_t)k, sizeof(double));
      n[j][t] = 0;
    }
  for (int r = 0; r < k; ++r)
    for (int j = 0; j < ns; ++j) {
      struct sample smp;
      if (run_one(sel[j], &smp) < 0) exit(1);
      for (int t = 0; t < T_N; ++t)
        if (smp.ts[t] > 0) at[j][t][n[j][t]++] = smp.ts[t];
    }
  printf("\ntimeline: median ms after the start (%d samples each; '-': not a moment of that variant)\n", k);
  printf("%-32s", "");
  for (int j = 0; j < ns; ++j) printf(" %17s", sel[j]->name);
  printf("\n");
  for (int t = 0; t < T_N; ++t) {
    printf("%-32s", kMoments[t]);
    for (int j = 0; j < ns; ++j) {
      if (n[j][t] > k / 2)
        printf(" %17.3f", median(at[j][t], n[j][t]));
      else
        printf(" %17s", "-");
    }
    printf("\n");
  }
}

static void usage(void) {
  fprintf(stderr,
          "usage: ns_breakdown [--quick] [--rounds R] [--runs N] [--cpu K] [--timeline K] [--init PATH]\n"
          "                    [--workspace-parent DIR] [--chain-only]\n"
          "       ns_breakdown --steps K [--workspace-parent DIR]   (the view's steps timed in place, only)\n"
          "  (run as root, from the source root after a build; see the header of ns_breakdown.c)\n");
  exit(2);
}

int main(int argc, char** argv) {
  if (strcmp(argv[0], "ns-breakdown-init") == 0) return mini_init(argc, argv);
  int rounds = 5, runs = 30, cpu = 0, chain_only = 0, timeline = 0, steps = 0;
  const char* init_path = NULL;
  const char* parent = "/var/tmp";
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--quick") == 0) {
      rounds = 3;
      runs = 12;
    } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
      runs = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--cpu") == 0 && i + 1 < argc) {
      cpu = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--init") == 0 && i + 1 < argc) {
      init_path = argv[++i];
    } else if (strcmp(argv[i], "--workspace-parent") == 0 && i + 1 < argc) {
      parent = argv[++i];
    } else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc) {
      steps = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--timeline") == 0 && i + 1 < argc) {
      timeline = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--chain-only") == 0) {
      chain_only = 1;
    } else {
      usage();
    }
  }
  if (rounds < 1 || runs < 1) usage();
  if (geteuid() != 0) {
    fprintf(stderr, "ns_breakdown: run as root (the netns alternatives setns into a network namespace)\n");
    return 2;
  }

  snprintf(g_uid_map, sizeof g_uid_map, "%u %u 1", (unsigned)geteuid(), (unsigned)geteuid());
  snprintf(g_gid_map, sizeof g_gid_map, "%u %u 1", (unsigned)getegid(), (unsigned)getegid());
  setup_workspace(parent);
  setup_init(init_path);
  build_filter();
  g_stack = make_stack();
  g_command_stack = make_stack();
  g_landlock_abi = (int)syscall(SYS_landlock_create_ruleset, NULL, 0, 1 /* VERSION */);
  if (g_landlock_abi < 2) {
    fprintf(stderr, "ns_breakdown: Landlock ABI >= 2 needed (uexec's backend needs it too)\n");
    return 1;
  }
  FILE* f = fopen("/proc/sys/kernel/cap_last_cap", "r");
  if (f) {
    if (fscanf(f, "%d", &g_last_cap) != 1) g_last_cap = 40;
    fclose(f);
  }
  // The shared empty netns of alt:net-shared, made once.
  g_host_net = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (g_host_net < 0 || unshare(CLONE_NEWNET) < 0) die("make the shared netns");
  g_shared_net = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (g_shared_net < 0 || setns(g_host_net, CLONE_NEWNET) < 0) die("back to the host netns");

  // The variants.
  struct variant vs[MAX_VARIANTS];
  int nv = 0;
  unsigned acc = 0;
  for (size_t i = 0; i < CHAIN_LEN; ++i) {
    acc |= kChain[i].add;
    vs[nv] = (struct variant){.name = kChain[i].name, .flags = acc, .chain_prev = nv > 0 ? nv - 1 : -1};
    ++nv;
  }
  const int full = nv - 1;
  if (!chain_only)
    for (size_t i = 0; i < ALTS_LEN; ++i) {
      vs[nv] = (struct variant){.name = kAlts[i].name, .flags = (F_ALL & ~kAlts[i].drop) | kAlts[i].add, .chain_prev = full};
      ++nv;
    }
  const int total_samples = rounds * runs;
  for (int i = 0; i < nv; ++i) {
    vs[i].total = calloc((size_t)total_samples, sizeof(double));
    vs[i].tail = calloc((size_t)total_samples, sizeof(double));
    vs[i].deferred = calloc((size_t)total_samples, sizeof(double));
    vs[i].round = calloc((size_t)runs, sizeof(double));
    vs[i].ratios = calloc((size_t)rounds, sizeof(double));
  }

  int nmounts = 0;
  if ((f = fopen("/proc/self/mountinfo", "r"))) {
    int c;
    while ((c = fgetc(f)) != EOF) nmounts += c == '\n';
    fclose(f);
  }
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  char kernel[128] = "?";
  if ((f = fopen("/proc/sys/kernel/osrelease", "r"))) {
    if (fgets(kernel, sizeof kernel, f)) kernel[strcspn(kernel, "\n")] = '\0';
    fclose(f);
  }
  printf("ns_breakdown: /bin/echo x on a fresh PTY, spawn -> output EOF + reaped\n");
  printf("  kernel %s, %ld CPUs, %d host mounts, Landlock ABI %d, seccomp filter %u insns (linear)\n", kernel, ncpu,
         nmounts, g_landlock_abi, g_filter.len);
  printf("  init: %s\n  workspace: %s (stubs .git .codex .agents .uexec), writable: workspace, /tmp\n", g_init_name,
         g_workspace);
  g_host_mounts = nmounts;
  if (steps > 0) {
    printf("\n");
    run_steps(steps);
    return 0;
  }
  printf("  %d rounds x %d samples per variant, interleaved\n\n", rounds, runs);
  fflush(stdout);

  // Warm-up: one of each (page cache, first-use costs).
  for (int i = 0; i < nv; ++i) {
    struct sample s;
    if (run_one(&vs[i], &s) < 0) return 1;
  }

  int rot = 0;
  for (int r = 0; r < rounds; ++r) {
    for (int i = 0; i < nv; ++i) vs[i].nround = 0;
    for (int k = 0; k < runs; ++k) {
      for (int j = 0; j < nv; ++j) {
        struct variant* v = &vs[(j + rot) % nv];
        struct sample s;
        if (run_one(v, &s) < 0) return 1;
        v->total[v->n] = s.total;
        v->tail[v->n] = s.tail;
        v->deferred[v->n] = s.deferred;
        v->n++;
        v->round[v->nround++] = s.total;
      }
      rot = (rot + 1) % nv;
    }
    double base = median(vs[0].round, vs[0].nround);
    for (int i = 0; i < nv; ++i) vs[i].ratios[vs[i].nratios++] = median(vs[i].round, vs[i].nround) / base;
  }

  if (cpu > 0) {
    for (int i = 0; i < nv; ++i) {
      struct sample s;
      usleep(200000);
      double b0 = busy_ms();
      for (int k = 0; k < cpu; ++k)
        if (run_one(&vs[i], &s) < 0) return 1;
      usleep(300000);  // deferred work (netns cleanup, RCU callbacks) lands in the window
      vs[i].cpu_ms = (busy_ms() - b0) / cpu;
    }
  }

  const double base_med = median(vs[0].total, vs[0].n);
  printf("%-19s %8s %8s %7s   %-19s %7s%s\n", "variant", "median", "step", "step%", "ratio med [min,max]", "tail",
         cpu > 0 ? "   cpu/spawn" : "");
  printf("%-19s %8s %8s %7s   %-19s %7s%s\n", "", "ms", "ms", "of base", "(per-round)", "ms", cpu > 0 ? "   ms (all CPUs)" : "");
  for (int i = 0; i < nv; ++i) {
    if (i == full + 1) printf("-- alternatives: the whole sandbox with one change (step = vs. \"+seccomp\")\n");
    const struct variant* v = &vs[i];
    double med = median(v->total, v->n);
    char step[16] = "", pct[16] = "";
    if (v->chain_prev >= 0) {
      double d = med - median(vs[v->chain_prev].total, vs[v->chain_prev].n);
      snprintf(step, sizeof step, "%+.3f", d);
      snprintf(pct, sizeof pct, "%+.0f%%", 100.0 * d / base_med);
    }
    char ratio[40];
    snprintf(ratio, sizeof ratio, "%.2f [%.2f,%.2f]", median(v->ratios, v->nratios), minv(v->ratios, v->nratios),
             maxv(v->ratios, v->nratios));
    printf("%-19s %8.3f %8s %7s   %-19s %7.3f", v->name, med, step, pct, ratio, median(v->tail, v->n));
    if (cpu > 0) printf("   %8.3f", v->cpu_ms);
    if (v->flags & X_HOLD_MNT) printf("   (deferred close: %.3f ms)", median(v->deferred, v->n));
    printf("\n");
  }
  if (timeline > 0) print_timeline(vs, nv, full, timeline);
  return 0;
}
