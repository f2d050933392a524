/* supervisor_protocol.h: what a sandbox's pid 1 (uexec-init, C) tells the manager (C++).
 *
 * One pipe, init's fd 3, read by the manager once init has been reaped: zero or more DENY
 * records (seccomp calls init answered with EPERM, aggregated by syscall and key argument)
 * and, with file records asked for (pty/write_notice.h), WRITE records (a path the sandbox
 * does not let the command change, and the call that tried) and READ records (a path it
 * hides, and the open that tried), at most
 * UEXEC_SUP_MAX_RECORDS in all and never more than the pipe holds (init must not wait on it),
 * then one STAT record with the command's wait status and the number of records not kept.
 * Fixed-size, native-endian: both ends are built from this tree for this machine.
 *
 * The other way, on init's fd 5 (a datagram socket): mask requests, one per datagram, a
 * type byte ('f' file, 'd' directory) followed by an absolute path (no NUL). init mounts an
 * empty mode-000 file or directory over the path in the sandbox's view, opened without
 * following symlinks; the deny-read files that appear after launch are masked this way.
 */
#ifndef UEXEC_PTY_SUPERVISOR_PROTOCOL_H
#define UEXEC_PTY_SUPERVISOR_PROTOCOL_H

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define UEXEC_SUP_DENY 0x594e4544u /* "DENY" */
#define UEXEC_SUP_STAT 0x54415453u /* "STAT" */
#define UEXEC_SUP_WRITE 0x54495257u /* "WRIT" */
#define UEXEC_SUP_READ 0x44414552u  /* "READ" */
#define UEXEC_SUP_PATH_MAX 200
#define UEXEC_SUP_MAX_RECORDS 64
#define UEXEC_SUP_MAX_MASK_PATH 4096

struct uexec_sup_record {
  uint32_t type;    /* UEXEC_SUP_DENY, UEXEC_SUP_WRITE, UEXEC_SUP_READ or UEXEC_SUP_STAT */
  int32_t nr;       /* DENY, WRITE, READ: the syscall number */
  uint32_t arch;    /* DENY, WRITE, READ: its AUDIT_ARCH */
  int32_t pid;      /* DENY, WRITE, READ: the first caller, in the sandbox's pid namespace */
  uint32_t count;   /* DENY, WRITE, READ: how many calls matched; STAT: how many records were not kept */
  int32_t status;   /* STAT: the command's wait status */
  uint64_t args[3]; /* DENY: the first three arguments of the first call */
  char path[UEXEC_SUP_PATH_MAX]; /* WRITE, READ: the absolute path (uexec_sup_fit_path: a long one loses its middle to "...") */
};

/* Around C that C++ includes too (here and pty/write_notice.h): C++'s cast warnings off. */
#if defined(__cplusplus) && defined(__clang__)
#define UEXEC_SHARED_C_BEGIN _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wold-style-cast\"")
#define UEXEC_SHARED_C_END _Pragma("GCC diagnostic pop")
#elif defined(__cplusplus)
#define UEXEC_SHARED_C_BEGIN                                                                       \
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wold-style-cast\"")           \
      _Pragma("GCC diagnostic ignored \"-Wuseless-cast\"")
#define UEXEC_SHARED_C_END _Pragma("GCC diagnostic pop")
#else
#define UEXEC_SHARED_C_BEGIN
#define UEXEC_SHARED_C_END
#endif

UEXEC_SHARED_C_BEGIN

/* `path` as a record holds it: whole when it fits, else its head, "...", and its tail (the
 * file name), so two long paths that differ only in the middle are merged, never cut silently. */
static inline void uexec_sup_fit_path(char out[UEXEC_SUP_PATH_MAX], const char* path) {
  size_t len = strlen(path);
  if (len < UEXEC_SUP_PATH_MAX) {
    memcpy(out, path, len + 1);
    return;
  }
  const size_t head = UEXEC_SUP_PATH_MAX / 3, tail = UEXEC_SUP_PATH_MAX - 1 - head - 3;
  memcpy(out, path, head);
  memcpy(out + head, "...", 3);
  memcpy(out + head + 3, path + len - tail, tail);
  out[UEXEC_SUP_PATH_MAX - 1] = '\0';
}

/* Counts one call in `records` (`*n` in use, `max` room; C for uexec-init, C++ for the
 * manager's listener): a repeat (same type and syscall, and the same key argument for DENY:
 * socket's family, ioctl's request; the same fitted path for WRITE and READ) adds to its record's count, a
 * new one is appended, or counted in `*dropped` when the table is full. `path`: WRITE and READ
 * only (NULL for DENY). */
static inline void uexec_sup_count(struct uexec_sup_record* records, unsigned* n, unsigned max, unsigned* dropped,
                                   uint32_t type, const struct seccomp_notif* call, const char* path) {
  const int key = call->data.nr == 16 /* x86_64 ioctl */ ? 1 : 0;
  char fitted[UEXEC_SUP_PATH_MAX] = "";
  if (path) uexec_sup_fit_path(fitted, path);
  for (unsigned i = 0; i < *n; ++i) {
    struct uexec_sup_record* r = &records[i];
    if (r->type != type || r->nr != (int32_t)call->data.nr || r->arch != call->data.arch) continue;
    if (type == UEXEC_SUP_DENY ? r->args[key] == call->data.args[key] : strcmp(r->path, fitted) == 0) {
      r->count++;
      return;
    }
  }
  if (*n == max) {
    ++*dropped;
    return;
  }
  struct uexec_sup_record* r = &records[(*n)++];
  memset(r, 0, sizeof *r);
  r->type = type;
  r->nr = (int32_t)call->data.nr;
  r->arch = call->data.arch;
  r->pid = (int32_t)call->pid;
  r->count = 1;
  for (int i = 0; i < 3; ++i) r->args[i] = call->data.args[i];
  if (path) memcpy(r->path, fitted, sizeof fitted);
}

UEXEC_SHARED_C_END

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif

/* Loads the notify flavour of the filter and returns its listener fd, or -1 (errno). Once the
 * listener has taken a call, the caller waits killable only (Linux 5.19+; older kernels load
 * without it): a signal handler that runs meanwhile cannot turn a held call into EINTR. Before
 * the listener takes it, a handled signal still can (restarted under SA_RESTART). */
static inline long uexec_seccomp_listen(const struct sock_fprog* prog) {
  long fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                    SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, prog);
  if (fd < 0 && errno == EINVAL)
    fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, prog);
  return fd;
}

#endif
