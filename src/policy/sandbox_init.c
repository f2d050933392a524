// sandbox_init.c: pid 1 of a sandboxed session's pid namespace (uexec-init).
//
// pty/spawn.cc's pid 1 builds the sandbox view, starts the command as pid 2, and then execs
// this program, from a sealed memfd copy taken when the manager started, so that nothing a
// sandbox writes can change the next sandbox's init. It is static and tiny on purpose: a
// sandboxed session costs this process and nothing of the manager's memory.
//
//   argv[1]  the command's pid (in the namespace)
//   argv[2]  optional: the fd of the command's seccomp listener (notify flavour)
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
#define _GNU_SOURCE
#include <errno.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
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

int main(int argc, char** argv) {
  if (argc < 2) return 125;
  command_pid = (pid_t)atoi(argv[1]);
  if (command_pid <= 1) return 125;
  int listener = argc > 2 ? atoi(argv[2]) : -1;
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
    struct pollfd p = {listener, POLLIN, 0};
    int n = ppoll(listener >= 0 ? &p : NULL, listener >= 0 ? 1 : 0, NULL, &waiting);
    if (n > 0 && (p.revents & POLLIN)) answer(listener);
    if (n > 0 && (p.revents & (POLLHUP | POLLERR | POLLNVAL))) listener = -1;  /* no filter users left */
  }
}
