// sandbox_init.c: pid 1 of a sandboxed session's pid namespace (uexec-init).
//
// pty/spawn.cc's pid 1 builds the sandbox view, starts the command as pid 2, and then execs
// this program, from a sealed memfd copy taken when the manager started, so that nothing a
// sandbox writes can change the next sandbox's init. It is static and tiny on purpose: a
// sandboxed session costs this process and nothing of the manager's memory.
//
//   argv[1]  the command's pid (in the namespace)
//   argv[2]  the fd of the command's seccomp listener (notify flavour), or "-"
//   argv[3]  the fd of the manager's mask requests (late deny-read), or "-"
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
// syscall and key argument (64 distinct at most) and sends them before the status.
//
// A second use, inside bwrap (which has a pid 1 of its own): `uexec-init --exec NOTIFY
// FALLBACK CHANNEL -- COMMAND...` loads the notify flavour of the filter (the raw BPF in fd
// NOTIFY) with a new listener, sends the listener over the datagram socket CHANNEL to the
// manager (pty/seccomp_listener.h), closes every fd above 2 and execs COMMAND. When an outer
// listener exists (EBUSY) it loads the errno flavour (fd FALLBACK) instead. Any failure exits
// 125 before COMMAND runs: the command never runs unfiltered.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <linux/filter.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pty/supervisor_protocol.h"

static volatile pid_t command_pid = 0;
static struct uexec_sup_record records[UEXEC_SUP_MAX_RECORDS];
static unsigned nrecords = 0;

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

/* The argument that tells two denials of one syscall apart: socket's family, ioctl's request. */
static uint64_t key_arg(const struct seccomp_data* d) {
  return d->nr == 16 /* ioctl */ ? d->args[1] : d->args[0];
}

static void record(const struct seccomp_notif* n) {
  for (unsigned i = 0; i < nrecords; ++i) {
    struct uexec_sup_record* r = &records[i];
    if (r->nr == n->data.nr && r->arch == n->data.arch &&
        (r->nr == 16 ? r->args[1] : r->args[0]) == key_arg(&n->data)) {
      r->count++;
      return;
    }
  }
  if (nrecords == UEXEC_SUP_MAX_RECORDS) return;
  struct uexec_sup_record* r = &records[nrecords++];
  memset(r, 0, sizeof *r);
  r->type = UEXEC_SUP_DENY;
  r->nr = n->data.nr;
  r->arch = n->data.arch;
  r->pid = (int32_t)n->pid;
  r->count = 1;
  for (int i = 0; i < 3; ++i) r->args[i] = n->data.args[i];
}

/* One pending notification: deny it with EPERM and count it. */
static void answer(int listener) {
  struct seccomp_notif req;
  struct seccomp_notif_resp resp;
  memset(&req, 0, sizeof req);
  if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) return;  /* the caller died: fine */
  record(&req);
  memset(&resp, 0, sizeof resp);
  resp.id = req.id;
  resp.error = -EPERM;
  ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

/* The sources of masks: an empty mode-000 file and directory on a detached tmpfs. */
static int mask_mnt = -1;

static void make_mask_source(void) {
  int fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
  if (fs < 0) return;
  if (fsconfig(fs, FSCONFIG_SET_STRING, "size", "4k", 0) == 0 && fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0)
    mask_mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
  close(fs);
  if (mask_mnt < 0) return;
  int f = openat(mask_mnt, "f", O_CREAT | O_WRONLY | O_CLOEXEC, 0);
  if (f >= 0) {
    fchmod(f, 0);
    close(f);
  }
  mkdirat(mask_mnt, "d", 0);
}

/* One mask request: 'f' or 'd', then the path. A path that is gone, or that now runs
 * through a symlink, is left alone. */
static void mask_request(int control) {
  char buf[UEXEC_SUP_MAX_MASK_PATH + 2];
  ssize_t n = recv(control, buf, sizeof buf - 1, MSG_DONTWAIT);
  if (n < 2 || mask_mnt < 0 || (buf[0] != 'f' && buf[0] != 'd') || buf[1] != '/') return;
  buf[n] = '\0';
  struct open_how how;
  memset(&how, 0, sizeof how);
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  int target = (int)syscall(SYS_openat2, AT_FDCWD, buf + 1, &how, sizeof how);
  if (target < 0) return;
  struct stat st;
  if (fstat(target, &st) == 0 && (S_ISDIR(st.st_mode) != 0) == (buf[0] == 'd')) {
    int src = open_tree(mask_mnt, buf[0] == 'd' ? "d" : "f", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    if (src >= 0) {
      struct mount_attr attr;
      memset(&attr, 0, sizeof attr);
      attr.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
      mount_setattr(src, "", AT_EMPTY_PATH, &attr, sizeof attr);
      move_mount(src, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
      close(src);
    }
  }
  close(target);
}

static int finish(int status) {
  for (unsigned i = 0; i < nrecords; ++i) write_all(&records[i], sizeof records[i]);
  struct uexec_sup_record st;
  memset(&st, 0, sizeof st);
  st.type = UEXEC_SUP_STAT;
  st.status = status;
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
  long listener = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog_notify);
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
  int control = argc > 3 && argv[3][0] != '-' ? atoi(argv[3]) : -1;
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
