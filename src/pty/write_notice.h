/* write_notice.h: which path a file-changing system call was about to change, read from the
 * caller, for `--log-denials`'s filesystem records (docs/sandbox.md §5.1).
 *
 * With write records asked for, the seccomp filter's notify flavour also holds the calls that
 * change a name (open/openat/creat for writing, mkdir, unlink, rmdir, rename, link, symlink,
 * truncate, mknod; seccomp.h) until the listener answers. The listener (uexec-init for the
 * namespace backend, the manager's SeccompListener for Landlock-only and bwrap) reads the
 * path from the caller's memory, makes it absolute against the caller's cwd or dirfd (from
 * /proc), decides whether the sandbox forbids writing there (init: the mount it lands on is
 * read-only in the sandbox's view; the manager: the policy's writable roots and carve-outs),
 * records it if so, and lets the call continue: the kernel's own layers (mounts, Landlock)
 * still decide, so a mistake here can only misreport, never allow. Best effort by nature:
 * the path is read while the caller waits and a symlink on the way is judged where it points
 * when the listener looks (it can be retargeted in between), and openat2 is not held. Only
 * `uexec sandbox --log-denials` asks for write records: the manager's listener answers on
 * that command's own loop, never a daemon's.
 *
 * Static inline C: included by uexec-init (C, musl or glibc -static) and by the manager
 * (C++), one copy of the rules for both.
 */
#ifndef UEXEC_PTY_WRITE_NOTICE_H
#define UEXEC_PTY_WRITE_NOTICE_H

#include <fcntl.h>
#include <linux/seccomp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#ifdef __cplusplus
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
#pragma GCC diagnostic ignored "-Wuseless-cast"
#endif

/* The syscalls held for write records (x86_64: foreign ABIs are killed by the filter). */
static const int uexec_wn_calls[] = {SYS_open,   SYS_openat,   SYS_creat,      SYS_mkdir,    SYS_mkdirat,
                                     SYS_unlink, SYS_unlinkat, SYS_rmdir,      SYS_rename,   SYS_renameat,
                                     SYS_renameat2, SYS_link,  SYS_linkat,     SYS_symlink,  SYS_symlinkat,
                                     SYS_truncate, SYS_mknod,  SYS_mknodat};
#define UEXEC_WN_OPEN_WRITE_FLAGS (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC)

/* Is `d` a call the write rules hold (open-like calls only with a write flag)? */
static inline int uexec_wn_is_write_call(const struct seccomp_data* d) {
  if (d->nr == SYS_open) return (d->args[1] & UEXEC_WN_OPEN_WRITE_FLAGS) != 0;
  if (d->nr == SYS_openat) return (d->args[2] & UEXEC_WN_OPEN_WRITE_FLAGS) != 0;
  for (unsigned i = 0; i < sizeof uexec_wn_calls / sizeof uexec_wn_calls[0]; ++i)
    if ((int)d->nr == uexec_wn_calls[i]) return 1;
  return 0;
}

/* Does `d` create a setuid or setgid file (an evidence rule of the root variant, answered
 * EPERM, never continued)? */
static inline int uexec_wn_makes_setid(const struct seccomp_data* d) {
  const uint64_t bits = S_ISUID | S_ISGID;
  if (d->nr == SYS_open) return (d->args[1] & O_CREAT) && (d->args[2] & bits);
  if (d->nr == SYS_openat) return (d->args[2] & O_CREAT) && (d->args[3] & bits);
  if (d->nr == SYS_creat || d->nr == SYS_mknod) return (d->args[1] & bits) != 0;
  if (d->nr == SYS_mknodat) return (d->args[2] & bits) != 0;
  return 0;
}

/* Does the call follow a symbolic link in its last component (open-like calls)? */
static inline int uexec_wn_follows_last(const struct seccomp_data* d) {
  if (d->nr == SYS_open) return !(d->args[1] & O_NOFOLLOW);
  if (d->nr == SYS_openat) return !(d->args[2] & O_NOFOLLOW);
  return d->nr == SYS_creat || d->nr == SYS_truncate;
}

/* The `which`-th (0 or 1) name `d` changes, as a dirfd and a pointer; 0 when there is none.
 * rename and link: the new name first, then (rename only) the old one. */
static inline int uexec_wn_target(const struct seccomp_data* d, int which, int* dirfd, uint64_t* ptr) {
  const int cwd = AT_FDCWD;
  int nr = (int)d->nr;
  *dirfd = cwd;
  if (which == 1) {
    if (nr == SYS_rename) return *ptr = d->args[0], 1;
    if (nr == SYS_renameat || nr == SYS_renameat2) return *dirfd = (int)d->args[0], *ptr = d->args[1], 1;
    return 0;
  }
  if (which != 0) return 0;
  if (nr == SYS_open || nr == SYS_creat || nr == SYS_mkdir || nr == SYS_unlink || nr == SYS_rmdir ||
      nr == SYS_truncate || nr == SYS_mknod)
    return *ptr = d->args[0], 1;
  if (nr == SYS_openat || nr == SYS_mkdirat || nr == SYS_unlinkat || nr == SYS_mknodat)
    return *dirfd = (int)d->args[0], *ptr = d->args[1], 1;
  if (nr == SYS_rename || nr == SYS_link || nr == SYS_symlink) return *ptr = d->args[1], 1;
  if (nr == SYS_renameat || nr == SYS_renameat2 || nr == SYS_linkat)
    return *dirfd = (int)d->args[2], *ptr = d->args[3], 1;
  if (nr == SYS_symlinkat) return *dirfd = (int)d->args[1], *ptr = d->args[2], 1;
  return 0;
}

/* A NUL-terminated string at `addr` in `pid`, at most n-1 bytes (read page by page: the string
 * may end just before an unmapped page). 0, or -1 when it cannot be read. */
static inline int uexec_wn_read_string(pid_t pid, uint64_t addr, char* out, size_t n) {
  size_t have = 0;
  if (n == 0 || addr == 0) return -1;
  while (have < n - 1) {
    size_t page_left = 4096 - (size_t)((addr + have) % 4096);
    size_t want = n - 1 - have < page_left ? n - 1 - have : page_left;
    struct iovec local = {out + have, want};
    struct iovec remote = {(void*)(uintptr_t)(addr + have), want};
    ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (got <= 0) return -1;
    void* nul = memchr(out + have, '\0', (size_t)got);
    if (nul) return 0;
    have += (size_t)got;
  }
  out[n - 1] = '\0';
  return 0;
}

/* `rel` made absolute against `pid`'s cwd or its `dirfd`, with "." and ".." and repeated
 * slashes folded lexically, into `out`. 0, or -1 (a base that cannot be read, too long). */
static inline int uexec_wn_absolute(pid_t pid, int dirfd, const char* rel, char* out, size_t n) {
  char joined[8192];
  size_t len = 0;
  if (rel[0] == '/') {
    len = (size_t)snprintf(joined, sizeof joined, "%s", rel);
  } else {
    char link[64];
    if (dirfd == AT_FDCWD) snprintf(link, sizeof link, "/proc/%d/cwd", (int)pid);
    else snprintf(link, sizeof link, "/proc/%d/fd/%d", (int)pid, dirfd);
    ssize_t k = readlink(link, joined, sizeof joined - 1);
    if (k <= 0 || joined[0] != '/') return -1;
    len = (size_t)k + (size_t)snprintf(joined + k, sizeof joined - (size_t)k, "/%s", rel);
  }
  if (len >= sizeof joined) return -1;
  /* Fold: out holds "/a/b" with no trailing slash ("/" alone for the root). */
  size_t o = 0;
  const char* p = joined;
  while (*p) {
    while (*p == '/') ++p;
    const char* end = p;
    while (*end && *end != '/') ++end;
    size_t k = (size_t)(end - p);
    if (k == 0) break;
    if (k == 1 && p[0] == '.') {
    } else if (k == 2 && p[0] == '.' && p[1] == '.') {
      while (o > 0 && out[o - 1] != '/') --o;
      if (o > 0) --o;
    } else {
      if (o + 1 + k + 1 > n) return -1;
      out[o++] = '/';
      memcpy(out + o, p, k);
      o += k;
    }
    p = end;
  }
  if (o == 0) out[o++] = '/';
  out[o] = '\0';
  return 0;
}

/* `path` (absolute, folded; n bytes of room) with the symbolic links on its way resolved as
 * the kernel will, in the listener's view, the last component too when the call follows it;
 * left as it is when nothing resolves. So a link planted in the workspace that points
 * outside is judged, and named, where it points. */
static inline void uexec_wn_resolve(char* path, size_t n, int follow_last) {
  char real[4096];
  if (follow_last && realpath(path, real) && strlen(real) < n) {
    memcpy(path, real, strlen(real) + 1);
    return;
  }
  char* slash = strrchr(path, '/');
  if (!slash || slash[1] == '\0') return;
  char base[4096];
  snprintf(base, sizeof base, "%s", slash);
  if (slash == path) return; /* in "/": nothing on the way */
  *slash = '\0';
  int ok = realpath(path, real) != NULL;
  *slash = '/';
  if (!ok) return;
  if (strcmp(real, "/") == 0) real[0] = '\0';
  size_t lr = strlen(real), lb = strlen(base);
  if (lr + lb + 1 > n) return;
  memcpy(path, real, lr);
  memcpy(path + lr, base, lb + 1);
}

#ifdef __cplusplus
#pragma GCC diagnostic pop
#endif

#endif
