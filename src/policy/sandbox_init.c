// sandbox_init.c: pid 1 of a sandboxed session's pid namespace (uexec-init).
//
// pty/spawn.cc's pid 1 builds the sandbox view, starts the command as pid 2, and then execs
// this program, from a sealed memfd copy taken when the manager started, so that nothing a
// sandbox writes can change the next sandbox's init. It is static and tiny on purpose: a
// sandboxed session costs this process and nothing of the manager's memory, and every
// sandboxed spawn pays for its exec. Built with musl where musl-gcc is installed (56 KB of
// text, a handful of page faults to start), else with glibc -static (780 KB): the first cuts
// ~1.5 ms from a namespace sandbox's spawn on the project's 2-core VMs (docs/benchmarks.md).
//
//   argv[1]  the command's pid (in the namespace)
//   argv[2]  the fd of the command's seccomp listener (notify flavour), or "-"
//   argv[3]  the fd of the manager's mask requests (late deny-read), or "-"
//   argv[4]  "w": file records (--log-denials), "wr": also the root rules (a setuid file's
//            creation is evidence), "-" or absent: none
//   fd 3     the status pipe (pty/supervisor_protocol.h): records, then the command's status
//
// The kernel delivers to a namespace's init only the signals it handles, so every signal a
// manager sends to the session (SIGTERM, SIGINT, SIGHUP, …) is caught here and forwarded to
// the command's process group. SIGKILL is not caught: it kills init, and with it the whole
// namespace, which is how the manager tears a sandbox down. When the command exits, init
// writes its status and exits; the kernel then kills every process left in the namespace
// (setsid and double-fork escapees included) and reaps them.
//
// With a seccomp listener, init answers every "evidence" call of the filter (seccomp.h) with
// EPERM itself and never lets one continue, so there is nothing to race; it counts them by
// syscall and key argument (64 distinct at most) and sends them before the status. With file
// records, every open and the calls that change a name are held too (pty/write_notice.h):
// init records the writes whose path lies on a read-only mount of the view it shares with
// the command and the reads that land on a mask, and lets every one of them continue; the
// mounts decide, as without records.
//
// A second use, inside bwrap (which has a pid 1 of its own): `uexec-init --exec NOTIFY
// FALLBACK CHANNEL -- COMMAND...` loads the notify flavour of the filter (the raw BPF in fd
// NOTIFY) with a new listener, sends the listener over the datagram socket CHANNEL to the
// manager (pty/seccomp_listener.h), closes every fd above 2 and execs COMMAND. When an outer
// listener exists (EBUSY) it loads the errno flavour (fd FALLBACK) instead. Any failure exits
// 125 before COMMAND runs: the command never runs unfiltered.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <linux/filter.h>
#include <linux/magic.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pty/supervisor_protocol.h"
#include "pty/write_notice.h"

#if !defined(__GLIBC__)
/* musl (the build's first choice, see src/meson.build) has no wrappers for the new mount API
 * in 1.2.3: the constants come from the kernel's header and the calls are raw system calls. */
#include <linux/mount.h>
static int fsopen(const char* fs, unsigned flags) { return (int)syscall(SYS_fsopen, fs, flags); }
static int fsconfig(int fd, unsigned cmd, const char* key, const void* value, int aux) {
  return (int)syscall(SYS_fsconfig, fd, cmd, key, value, aux);
}
static int fsmount(int fd, unsigned flags, unsigned attrs) { return (int)syscall(SYS_fsmount, fd, flags, attrs); }
static int open_tree(int dirfd, const char* path, unsigned flags) {
  return (int)syscall(SYS_open_tree, dirfd, path, flags);
}
static int move_mount(int from_dirfd, const char* from, int to_dirfd, const char* to, unsigned flags) {
  return (int)syscall(SYS_move_mount, from_dirfd, from, to_dirfd, to, flags);
}
static int mount_setattr(int dirfd, const char* path, unsigned flags, struct mount_attr* attr, size_t size) {
  return (int)syscall(SYS_mount_setattr, dirfd, path, flags, attr, size);
}
#endif

static volatile pid_t command_pid = 0;
static struct uexec_sup_record records[UEXEC_SUP_MAX_RECORDS];
static unsigned nrecords = 0;
static unsigned dropped = 0; /* records not kept (the table full, or no room in the pipe) */

static void forward(int sig) {
  int saved = errno;
  if (kill(-command_pid, sig) < 0) kill(command_pid, sig);
  errno = saved;
}

static void on_child(int sig) { (void)sig; }

static void write_all(const void* p, size_t n) {
  const char* c = p;
  while (n > 0) {
    ssize_t w = write(3, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    c += w;
    n -= (size_t)w;
  }
}

static int file_records = 0;   /* argv[4] "w" */
static int setid_evidence = 0;  /* argv[4] "wr" */

static int read_only_at(const char* path) {
  struct statvfs v;
  return statvfs(path, &v) == 0 && (v.f_flag & ST_RDONLY);
}

/* Is `path` a mask: mode 000 on a tmpfs of 4 KiB mounted right there (its parent is on
 * another device)? Only uexec's masks (launch-time and late) are: the command cannot mount,
 * and the view's own tmpfs mounts (/dev, a private /tmp) are larger. */
static int is_mask(const char* path) {
  struct stat st, up;
  struct statfs fs;
  char parent[UEXEC_SUP_MAX_MASK_PATH];
  if (lstat(path, &st) != 0 || (st.st_mode & 07777) != 0 || statfs(path, &fs) != 0 || fs.f_type != TMPFS_MAGIC ||
      (unsigned long long)fs.f_blocks * (unsigned long long)fs.f_bsize > 4096)
    return 0;
  uexec_wn_parent(path, parent, sizeof parent);
  return parent[0] != '\0' && stat(parent, &up) == 0 && up.st_dev != st.st_dev;
}

/* A read lands on a mask when `path`, or the nearest ancestor that exists (a name hidden
 * below a masked directory is missing: ENOENT, or EACCES when init's user namespace is an
 * unprivileged user's), is one. */
static int masked_at(const char* path) {
  char p[UEXEC_SUP_MAX_MASK_PATH];
  struct stat st;
  snprintf(p, sizeof p, "%s", path);
  return uexec_wn_nearest_existing(p, &st) == 0 && is_mask(p);
}

/* The rule by the view's mounts (uexec_wn_forbids_fn): a change lands on a read-only
 * mount, a read on a mask. The view's own devices and /proc never count. */
static int mount_forbids(void* ctx, const char* path, enum uexec_wn_place place) {
  (void)ctx;
  if (strncmp(path, "/dev/", 5) == 0 || strcmp(path, "/dev") == 0 || strncmp(path, "/proc/", 6) == 0) return 0;
  if (place == UEXEC_WN_READ) return masked_at(path);
  if (place != UEXEC_WN_NAME) return read_only_at(path);
  char parent[UEXEC_SUP_MAX_MASK_PATH];
  uexec_wn_parent(path, parent, sizeof parent);
  return read_only_at(parent);
}

/* A held file call: recorded when it would write or read what the view's mounts forbid. */
static void note_file_call(int listener, const struct seccomp_notif* n) {
  char path[UEXEC_SUP_MAX_MASK_PATH];
  int place = uexec_wn_judge((pid_t)n->pid, &n->data, mount_forbids, NULL, path, sizeof path);
  if (!place) return;
  /* The path was read from the caller that is still waiting, not from a reused pid. */
  __u64 id = n->id;
  if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0)
    uexec_sup_count(records, &nrecords, UEXEC_SUP_MAX_RECORDS, &dropped,
                    place == UEXEC_WN_READ ? UEXEC_SUP_READ : UEXEC_SUP_WRITE, n, path);
}

/* One pending notification: an evidence call is denied with EPERM and counted; a held file
 * call (file records) continues, recorded when the view forbids it. */
static void answer(int listener) {
  struct seccomp_notif req;
  struct seccomp_notif_resp resp;
  memset(&req, 0, sizeof req);
  if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) return;  /* the caller died: fine */
  memset(&resp, 0, sizeof resp);
  resp.id = req.id;
  if (file_records && uexec_wn_is_file_call(&req.data) && !(setid_evidence && uexec_wn_makes_setid(&req.data))) {
    note_file_call(listener, &req);
    resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
  } else {
    uexec_sup_count(records, &nrecords, UEXEC_SUP_MAX_RECORDS, &dropped, UEXEC_SUP_DENY, &req, NULL);
    resp.error = -EPERM;
  }
  ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

/* The sources of masks: an empty mode-000 file and directory on a detached tmpfs. */
static int mask_mnt = -1;
static dev_t mask_dev = 0;

static void make_mask_source(void) {
  int fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
  if (fs < 0) return;
  if (fsconfig(fs, FSCONFIG_SET_STRING, "size", "4k", 0) == 0 && fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0)
    mask_mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
  close(fs);
  if (mask_mnt < 0) return;
  struct stat st;
  if (fstat(mask_mnt, &st) == 0) mask_dev = st.st_dev;
  int f = openat(mask_mnt, "f", O_CREAT | O_WRONLY | O_CLOEXEC, 0);
  if (f >= 0) {
    fchmod(f, 0);
    close(f);
  }
  mkdirat(mask_mnt, "d", 0);
}

static int within(const char* path, const char* root, size_t n) {
  return strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* Does the open file behind /proc link `link` still reach what was just masked at `path`:
 * the masked file itself (by device and inode; opened for writing only it cannot be read), or,
 * for a directory, the directory or anything below it (a directory fd or a cwd there can
 * open what is below without crossing the mask)? The mask itself does not count. */
static int reaches(const char* link, const char* fdinfo, const char* path, int dir, const struct stat* was) {
  struct stat st;
  if (stat(link, &st) != 0 || st.st_dev == mask_dev) return 0;
  if (dir) {
    char to[UEXEC_SUP_MAX_MASK_PATH + 1];
    ssize_t n = readlink(link, to, sizeof to - 1);
    if (n <= 0) return 0;
    to[n] = '\0';
    if (!within(to, path, strlen(path))) return 0;
  } else if (st.st_dev != was->st_dev || st.st_ino != was->st_ino) {
    return 0;
  }
  if (fdinfo && S_ISREG(st.st_mode)) {
    char buf[256];
    int fd = open(fdinfo, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 1;
    buf[n] = '\0';
    const char* f = strstr(buf, "flags:");
    unsigned long flags = f ? strtoul(f + 6, NULL, 8) : 0;
    if (f && !(flags & O_PATH) && (flags & O_ACCMODE) == O_WRONLY) return 0;
  }
  return 1;
}

/* A mapping of the masked file (it outlives the fd that made it), or of a file below a
 * masked directory. */
static int mapped(const char* maps, const char* path, int dir, const struct stat* was) {
  int fd = open(maps, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[8192];
  size_t have = 0;
  int hit = 0;
  for (;;) {
    ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
    if (n <= 0) break;
    have += (size_t)n;
    buf[have] = '\0';
    char* line = buf;
    char* nl;
    while (!hit && (nl = strchr(line, '\n'))) {
      *nl = '\0';
      unsigned maj = 0, mnr = 0;
      unsigned long ino = 0;
      int off = 0;
      if (sscanf(line, "%*s %*s %*s %x:%x %lu %n", &maj, &mnr, &ino, &off) >= 3 && ino != 0) {
        if (dir) {
          hit = off > 0 && within(line + off, path, strlen(path));
        } else {
          hit = ino == was->st_ino && maj == major(was->st_dev) && mnr == minor(was->st_dev);
        }
      }
      line = nl + 1;
    }
    have = strlen(line);
    memmove(buf, line, have);
    if (have == sizeof buf - 1) have = 0; /* a line longer than the buffer: skip it */
    if (hit) break;
  }
  close(fd);
  return hit;
}

static int is_number(const char* s) {
  if (!*s) return 0;
  for (; *s; ++s)
    if (*s < '0' || *s > '9') return 0;
  return 1;
}

/* Whether any process of the sandbox (every one but us) holds what was just masked. */
static int held_open(const char* path, int dir, const struct stat* was) {
  DIR* proc = opendir("/proc");
  if (!proc) return 1; /* cannot tell: the safe answer */
  int held = 0;
  char a[1024], b[1024];  /* three names of at most 255 bytes each */
  struct dirent* p;
  while (!held && (p = readdir(proc))) {
    if (!is_number(p->d_name) || strcmp(p->d_name, "1") == 0) continue;
    snprintf(a, sizeof a, "/proc/%s/maps", p->d_name);
    if (mapped(a, path, dir, was)) held = 1;
    snprintf(a, sizeof a, "/proc/%s/task", p->d_name);
    DIR* tasks = opendir(a);
    if (!tasks) continue;
    struct dirent* t;
    while (!held && (t = readdir(tasks))) {
      if (!is_number(t->d_name)) continue;
      static const char* const dirs[] = {"cwd", "root"};
      for (int i = 0; i < 2 && !held; ++i) {
        snprintf(a, sizeof a, "/proc/%s/task/%s/%s", p->d_name, t->d_name, dirs[i]);
        held = reaches(a, NULL, path, dir, was);
      }
      snprintf(a, sizeof a, "/proc/%s/task/%s/fd", p->d_name, t->d_name);
      DIR* fds = opendir(a);
      if (!fds) continue;
      struct dirent* f;
      while (!held && (f = readdir(fds))) {
        if (!is_number(f->d_name)) continue;
        snprintf(a, sizeof a, "/proc/%s/task/%s/fd/%s", p->d_name, t->d_name, f->d_name);
        snprintf(b, sizeof b, "/proc/%s/task/%s/fdinfo/%s", p->d_name, t->d_name, f->d_name);
        held = reaches(a, b, path, dir, was);
      }
      closedir(fds);
    }
    closedir(tasks);
  }
  closedir(proc);
  return held;
}

/* One mask request: 'f' or 'd', then the path. A path that is gone, or that now runs
 * through a symlink, is left alone. A mask covers the name from now on, not what was opened
 * through it before: when a process of the sandbox still holds the file (an fd, a mapping,
 * a directory fd or cwd below a masked directory), every process here is stopped and the
 * manager is told ("H" and the path), and it ends the session (docs/sandbox.md §3.8). The
 * mask goes on first and the holders are looked for after: a look before would leave the
 * name open for as long as the sandbox makes that look take (its processes and fds). A
 * mask that cannot be mounted is reported too ("F"). */
static void mask_request(int control) {
  char buf[UEXEC_SUP_MAX_MASK_PATH + 2];
  ssize_t n = recv(control, buf, sizeof buf - 1, MSG_DONTWAIT);
  if (n < 2 || (buf[0] != 'f' && buf[0] != 'd') || buf[1] != '/') return;
  buf[n] = '\0';
  if (mask_mnt < 0) {
    buf[0] = 'F'; /* no mask source: nothing late can be masked */
    send(control, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
    return;
  }
  struct open_how how;
  memset(&how, 0, sizeof how);
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  int target = (int)syscall(SYS_openat2, AT_FDCWD, buf + 1, &how, sizeof how);
  if (target < 0) {
    if (errno == ELOOP) { /* a symlink now on the way: it cannot be masked where it was found */
      buf[0] = 'F';
      send(control, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
    }
    return; /* gone, or under a mask already */
  }
  struct stat st;
  int dir = buf[0] == 'd';
  int masked = 0;
  if (fstat(target, &st) != 0 || (S_ISDIR(st.st_mode) != 0) != dir || st.st_dev == mask_dev) {
    close(target); /* replaced meanwhile, or masked already: the next event says more */
    return;
  }
  {
    int src = open_tree(mask_mnt, dir ? "d" : "f", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    if (src >= 0) {
      struct mount_attr attr;
      memset(&attr, 0, sizeof attr);
      attr.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
      mount_setattr(src, "", AT_EMPTY_PATH, &attr, sizeof attr);
      masked = move_mount(src, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) == 0;
      close(src);
    }
  }
  close(target);
  if (!masked) {
    /* The name is there and cannot be masked: the manager ends the session ("F"). */
    buf[0] = 'F';
    send(control, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
    return;
  }
  if (held_open(buf + 1, dir, &st)) {
    kill(-1, SIGSTOP);
    buf[0] = 'H';
    send(control, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
  }
}

/* How many records the status pipe takes with room left for STAT. The manager reads the pipe
 * only once init is reaped, so init must never wait on it: a pipe of a user over
 * pipe-user-pages-soft holds two pages, and a record that does not fit in a page's rest
 * takes the next page. */
static unsigned pipe_room(void) {
  long bytes = fcntl(3, F_GETPIPE_SZ);
  long pages = bytes > 0 ? bytes / 4096 : 1;
  long slots = pages * (long)(4096 / sizeof(struct uexec_sup_record));
  return slots > 1 ? (unsigned)(slots - 1) : 0;
}

static int finish(int status) {
  /* Non-blocking as well: if the room were misjudged, a record is lost, init never hangs. */
  fcntl(3, F_SETFL, fcntl(3, F_GETFL) | O_NONBLOCK);
  unsigned room = pipe_room(), sent = nrecords < room ? nrecords : room;
  for (unsigned i = 0; i < sent; ++i) write_all(&records[i], sizeof records[i]);
  struct uexec_sup_record st;
  memset(&st, 0, sizeof st);
  st.type = UEXEC_SUP_STAT;
  st.status = status;
  st.count = dropped + (nrecords - sent);
  write_all(&st, sizeof st);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

/* The BPF program in `fd` (raw sock_filter instructions), in `prog`; 0 or -1. */
static int read_program(int fd, struct sock_fprog* prog) {
  struct stat st;
  if (fstat(fd, &st) < 0 || st.st_size <= 0 || st.st_size % sizeof(struct sock_filter) != 0 ||
      st.st_size > 65536 * (off_t)sizeof(struct sock_filter))
    return -1;
  struct sock_filter* insns = malloc((size_t)st.st_size);
  if (!insns || pread(fd, insns, (size_t)st.st_size, 0) != st.st_size) return -1;
  prog->len = (unsigned short)(st.st_size / (off_t)sizeof(struct sock_filter));
  prog->filter = insns;
  return 0;
}

static int send_listener(int sock, int fd) {
  char byte = 'F';
  struct iovec iov = {&byte, 1};
  union {
    struct cmsghdr align;
    char buf[CMSG_SPACE(sizeof(int))];
  } control;
  memset(&control, 0, sizeof control);
  struct msghdr msg;
  memset(&msg, 0, sizeof msg);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.buf;
  msg.msg_controllen = sizeof control.buf;
  struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(c), &fd, sizeof fd);
  return sendmsg(sock, &msg, MSG_NOSIGNAL) < 0 ? -1 : 0;
}

static void say(const char* what, const char* detail) {
  char buf[512];
  int n = snprintf(buf, sizeof buf, "uexec-init: %s%s%s: %s\n", what, detail ? " " : "", detail ? detail : "",
                   strerror(errno));
  if (n > 0) (void)!write(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* --exec NOTIFY FALLBACK CHANNEL -- COMMAND... (see the top). */
static int exec_filtered(int argc, char** argv) {
  if (argc < 7 || strcmp(argv[5], "--") != 0) return 125;
  int notify = atoi(argv[2]), fallback = atoi(argv[3]), channel = atoi(argv[4]);
  struct sock_fprog prog_notify, prog_fallback;
  if (read_program(notify, &prog_notify) < 0 || read_program(fallback, &prog_fallback) < 0) {
    say("read the seccomp filter", NULL);
    return 125;
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
    say("no_new_privs", NULL);
    return 125;
  }
  long listener = uexec_seccomp_listen(&prog_notify);
  if (listener < 0) {
    if (errno != EBUSY || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog_fallback) < 0) {
      say("seccomp", NULL);
      return 125;
    }
  } else if (send_listener(channel, (int)listener) < 0) {
    /* Nobody would answer the notify rules: refuse to run rather than hang the command. */
    say("send the seccomp listener", NULL);
    return 125;
  }
  if (syscall(SYS_close_range, 3, ~0U, 0) < 0)
    for (int fd = 3; fd < 1024; ++fd) close(fd);
  execvp(argv[6], &argv[6]);
  int err = errno;
  say("execvp", argv[6]);
  return err == ENOENT ? 127 : 126;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "--exec") == 0) return exec_filtered(argc, argv);
  if (argc < 2) return 125;
  command_pid = (pid_t)atoi(argv[1]);
  if (command_pid <= 1) return 125;
  int listener = argc > 2 && argv[2][0] != '-' ? atoi(argv[2]) : -1;
  /* A held call wakes init on the caller's CPU (Linux 6.6+; ignored before): the round trip
   * of a held file call drops by about a third. */
  if (listener >= 0) ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP);
  int control = argc > 3 && argv[3][0] != '-' ? atoi(argv[3]) : -1;
  file_records = argc > 4 && argv[4][0] == 'w';
  setid_evidence = file_records && argv[4][1] == 'r';
  if (control >= 0) make_mask_source();
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);  /* nothing in the sandbox may read or trace init */

  static const int forwarded[] = {SIGHUP, SIGINT,  SIGQUIT, SIGTERM, SIGUSR1,
                                  SIGUSR2, SIGALRM, SIGCONT, SIGWINCH, SIGPIPE};
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = forward;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (unsigned i = 0; i < sizeof forwarded / sizeof forwarded[0]; ++i) sigaction(forwarded[i], &sa, 0);
  /* SIGCHLD stays blocked except inside ppoll, so a child's end always interrupts the wait. */
  sa.sa_handler = on_child;
  sa.sa_flags = 0;
  sigaction(SIGCHLD, &sa, 0);
  sigset_t chld, waiting;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, &waiting);
  sigdelset(&waiting, SIGCHLD);

  for (;;) {
    int status = 0;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
      if (pid == command_pid) {
        /* Calls still queued from the command's last moments are answered and counted. */
        if (listener >= 0) {
          struct pollfd p = {listener, POLLIN, 0};
          while (poll(&p, 1, 0) > 0 && (p.revents & POLLIN)) answer(listener);
        }
        return finish(status);
      }
    if (pid < 0 && errno == ECHILD) return 125;  /* cannot happen: the command is our child */
    struct pollfd p[2];
    int np = 0, li = -1, ci = -1;
    if (listener >= 0) {
      li = np;
      p[np++] = (struct pollfd){listener, POLLIN, 0};
    }
    if (control >= 0) {
      ci = np;
      p[np++] = (struct pollfd){control, POLLIN, 0};
    }
    int n = ppoll(np ? p : NULL, (nfds_t)np, NULL, &waiting);
    if (n <= 0) continue;
    if (li >= 0 && (p[li].revents & POLLIN)) answer(listener);
    if (li >= 0 && (p[li].revents & (POLLHUP | POLLERR | POLLNVAL))) listener = -1;  /* no filter users left */
    if (ci >= 0 && (p[ci].revents & POLLIN)) mask_request(control);
    if (ci >= 0 && (p[ci].revents & (POLLHUP | POLLERR | POLLNVAL))) control = -1;
  }
}
