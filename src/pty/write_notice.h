/* write_notice.h: which path a file system call was about to write, or read where the
 * sandbox hides it, read from the caller, for `--log-denials`'s filesystem records
 * (docs/sandbox.md §5.4).
 *
 * With file records asked for, the seccomp filter's notify flavour also holds every open and
 * openat, and the calls that change a name (creat, mkdir, unlink, rmdir, rename, link,
 * symlink, truncate, mknod; seccomp.h), until the listener answers. The listener (uexec-init
 * for the namespace backend, the manager's SeccompListener for Landlock-only and bwrap) reads
 * the path from the caller's memory, makes it absolute against the caller's cwd or dirfd
 * (from /proc), finds where the call lands (uexec_wn_judge: the file written or read, the
 * directory a name is added to or taken from, O_TMPFILE's directory; a call that fails before
 * the kernel's permission check, such as mkdir of an existing name, is not judged), asks the
 * listener's rule whether the sandbox forbids it (init: a read-only mount or a mask of the
 * sandbox's view; the manager: the policy's writable roots, carve-outs and hidden paths),
 * records it if so, and lets the call continue: the kernel's own layers (mounts, Landlock)
 * still decide, so a mistake here can only misreport, never allow. Best effort by nature:
 * the path is read while the caller waits and a symlink on the way is judged where it points
 * when the listener looks (it can be retargeted in between), and openat2 is not held. Only
 * `uexec sandbox --log-denials` asks for file records: the manager's listener answers on
 * that command's own loop, never a daemon's.
 *
 * Static inline C: included by uexec-init (C, musl or glibc -static) and by the manager
 * (C++), one copy of the rules for both.
 */
#ifndef UEXEC_PTY_WRITE_NOTICE_H
#define UEXEC_PTY_WRITE_NOTICE_H

#include <errno.h>
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

#include "pty/supervisor_protocol.h"

UEXEC_SHARED_C_BEGIN

/* The syscalls held for file records (x86_64: foreign ABIs are killed by the filter). */
static const int uexec_wn_calls[] = {SYS_open,   SYS_openat,   SYS_creat,      SYS_mkdir,    SYS_mkdirat,
                                     SYS_unlink, SYS_unlinkat, SYS_rmdir,      SYS_rename,   SYS_renameat,
                                     SYS_renameat2, SYS_link,  SYS_linkat,     SYS_symlink,  SYS_symlinkat,
                                     SYS_truncate, SYS_mknod,  SYS_mknodat};
/* The open flag bits with which the mode argument counts: O_CREAT, and the kernel's
 * __O_TMPFILE bit alone (glibc's O_TMPFILE adds O_DIRECTORY); an O_TMPFILE file can be
 * linked in later with linkat. */
#define UEXEC_WN_TMPFILE_BIT 020000000

/* Is `d` a call the file-record rules hold? */
static inline int uexec_wn_is_file_call(const struct seccomp_data* d) {
  for (unsigned i = 0; i < sizeof uexec_wn_calls / sizeof uexec_wn_calls[0]; ++i)
    if ((int)d->nr == uexec_wn_calls[i]) return 1;
  return 0;
}

/* Does `d` create a setuid or setgid file (an evidence rule of the root variant, answered
 * EPERM, never continued)? */
static inline int uexec_wn_makes_setid(const struct seccomp_data* d) {
  const uint64_t bits = S_ISUID | S_ISGID;
  const uint64_t creates = O_CREAT | UEXEC_WN_TMPFILE_BIT;
  if (d->nr == SYS_open) return (d->args[1] & creates) && (d->args[2] & bits);
  if (d->nr == SYS_openat) return (d->args[2] & creates) && (d->args[3] & bits);
  if (d->nr == SYS_creat || d->nr == SYS_mknod) return (d->args[1] & bits) != 0;
  if (d->nr == SYS_mknodat) return (d->args[2] & bits) != 0;
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

/* `rel` made absolute against `pid`'s cwd or its `dirfd`, with "." and repeated slashes
 * folded, into `out`; ".." is kept for uexec_wn_resolve, which walks it as the kernel does
 * (after a symlink it leads to the link's target's parent). 0, or -1 (a base that cannot be
 * read, too long). */
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
  /* /proc's links would resolve in the listener's own process (/proc/self, fd links): left
   * as they are, and /proc never counts. */
  if (strncmp(path, "/proc/", 6) == 0) return;
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

/* Where a held call's change lands, for the listener's rule: */
enum uexec_wn_place {
  UEXEC_WN_FILE = 1,   /* an existing file's contents (open for writing, truncate): the file */
  UEXEC_WN_NAME = 2,   /* a name added to or taken from its directory: that directory */
  UEXEC_WN_INSIDE = 3, /* an unnamed file made inside this directory (O_TMPFILE) */
  UEXEC_WN_READ = 4,   /* a file or directory opened without writing (it may not exist: its
                          directory may be hidden) */
};

/* The listener's rule: does the sandbox forbid this call at `path` (absolute, resolved), landing at `place`? */
typedef int (*uexec_wn_forbids_fn)(void* ctx, const char* path, enum uexec_wn_place place);

/* Does `rel` end in "." or ".." (a name no call here adds, takes or writes: EEXIST, EISDIR,
 * EBUSY, EINVAL come first)? */
static inline int uexec_wn_ends_in_dots(const char* rel) {
  size_t len = strlen(rel);
  while (len > 1 && rel[len - 1] == '/') --len;
  size_t start = len;
  while (start > 0 && rel[start - 1] != '/') --start;
  size_t k = len - start;
  return (k == 1 && rel[start] == '.') || (k == 2 && rel[start] == '.' && rel[start + 1] == '.');
}

/* One name a call names, read from the caller and made absolute and resolved: 0, or -1 when
 * it cannot be read or names nothing to judge (empty: AT_EMPTY_PATH; "." or ".."). */
static inline int uexec_wn_name(pid_t pid, int dirfd, uint64_t ptr, int follow_last, char* out, size_t n) {
  char rel[4096];
  if (uexec_wn_read_string(pid, ptr, rel, sizeof rel) != 0 || rel[0] == '\0' || uexec_wn_ends_in_dots(rel))
    return -1;
  if (uexec_wn_absolute(pid, dirfd, rel, out, n) != 0) return -1;
  uexec_wn_resolve(out, n, follow_last);
  return 0;
}

/* A directory a call names (O_TMPFILE's), read from the caller, made absolute and resolved
 * whole ("." and ".." included): 0, or -1 when it cannot be read or does not resolve. */
static inline int uexec_wn_directory(pid_t pid, int dirfd, uint64_t ptr, char* out, size_t n) {
  char rel[4096], real[4096];
  if (uexec_wn_read_string(pid, ptr, rel, sizeof rel) != 0 || rel[0] == '\0') return -1;
  if (uexec_wn_absolute(pid, dirfd, rel, out, n) != 0) return -1;
  if (strncmp(out, "/proc/", 6) == 0) return 0; /* as uexec_wn_resolve: never through /proc */
  if (!realpath(out, real) || strlen(real) >= n) return -1;
  memcpy(out, real, strlen(real) + 1);
  return 0;
}

/* `path`'s directory into `out` (n bytes): "/" for a name in the root; "" when `path` has
 * no slash. */
static inline void uexec_wn_parent(const char* path, char* out, size_t n) {
  snprintf(out, n, "%s", path);
  char* slash = strrchr(out, '/');
  if (!slash) out[0] = '\0';
  else slash[slash == out ? 1 : 0] = '\0';
}

/* `path` (absolute; changed in place) cut back to the nearest ancestor that exists, itself
 * included, climbing only past names that are missing (ENOENT) or out of search reach
 * (EACCES: below a mode-000 mask); its lstat into `st`. 0, or -1 (ENOTDIR and the rest:
 * the path runs through something that is not a directory). */
static inline int uexec_wn_nearest_existing(char* path, struct stat* st) {
  while (lstat(path, st) != 0) {
    char* slash = strrchr(path, '/');
    if ((errno != ENOENT && errno != EACCES) || !slash || slash == path) return -1;
    *slash = '\0';
  }
  return 0;
}

/* Is the missing `path` missing below a directory (ENOENT, or EACCES under a mode-000 mask,
 * all the way up to one), not below a file (ENOTDIR)? */
static inline int uexec_wn_below_directory(const char* path) {
  char p[4096];
  struct stat st;
  snprintf(p, sizeof p, "%s", path);
  return uexec_wn_nearest_existing(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static inline int uexec_wn_exists(const char* path) {
  struct stat st;
  return lstat(path, &st) == 0;
}

/* Would creating the (absent) name `path` reach the kernel's write check: its directory is
 * there? Otherwise the call fails with ENOENT or ENOTDIR before anything is written. */
static inline int uexec_wn_creatable(const char* path) {
  char parent[4096];
  struct stat st;
  uexec_wn_parent(path, parent, sizeof parent);
  return parent[0] != '\0' && stat(parent, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The dangling symlink `path` (n bytes of room) replaced by where it points, made absolute
 * against the link's directory and resolved up to its last component. 0, or -1. */
static inline int uexec_wn_dangling_target(char* path, size_t n) {
  char to[4096], joined[8192];
  ssize_t k = readlink(path, to, sizeof to - 1);
  if (k <= 0) return -1;
  to[k] = '\0';
  if (to[0] == '/') {
    snprintf(joined, sizeof joined, "%s", to);
  } else {
    char* slash = strrchr(path, '/');
    if (!slash) return -1;
    snprintf(joined, sizeof joined, "%.*s/%s", (int)(slash - path), path, to);
  }
  if (uexec_wn_ends_in_dots(joined) || uexec_wn_absolute(0, AT_FDCWD, joined, path, n) != 0) return -1;
  uexec_wn_resolve(path, n, 0);
  return 0;
}

/* `place` when the listener's rule forbids the call there, else 0. */
static inline int uexec_wn_verdict(uexec_wn_forbids_fn forbids, void* ctx, const char* path, enum uexec_wn_place place) {
  return forbids(ctx, path, place) ? (int)place : 0;
}

/* Judges the held call `d` of `pid`: where it lands (an uexec_wn_place) with the path into
 * `out` (n bytes) when the sandbox forbids it there (`forbids`), 0 when it writes or reads
 * nothing forbidden. A call that fails before the kernel's permission check is not a
 * denial: a create whose name exists (EEXIST wins over EROFS and Landlock), a remove or
 * rename whose name is missing (RENAME_EXCHANGE: either name), an O_CREAT|O_EXCL of an
 * existing name, a directory opened for writing (EISDIR), a last component "." or "..",
 * an O_PATH open (no permission check). An open that writes nothing is judged as a read
 * (UEXEC_WN_READ), also when its name is missing: the directory that should hold it may be
 * hidden. The last component is followed only by the calls that follow it (open without
 * O_NOFOLLOW, creat, truncate; a dangling link an open follows is judged where it points,
 * one link deep); rename, link, unlink and the rest judge the name in its directory, so
 * moving a workspace symlink that points at /usr is a workspace change.
 * linkat(fd, "", …, AT_EMPTY_PATH) judges only the new name. */
static inline int uexec_wn_judge(pid_t pid, const struct seccomp_data* d, uexec_wn_forbids_fn forbids, void* ctx,
                                 char* out, size_t n) {
  const int nr = (int)d->nr;
  const int cwd = AT_FDCWD;
  if (nr == SYS_open || nr == SYS_openat || nr == SYS_creat) {
    int dirfd = nr == SYS_openat ? (int)d->args[0] : cwd;
    uint64_t ptr = nr == SYS_openat ? d->args[1] : d->args[0];
    uint64_t flags = nr == SYS_open ? d->args[1] : nr == SYS_openat ? d->args[2] : (O_CREAT | O_WRONLY | O_TRUNC);
    if (flags & O_PATH) return 0;
    if ((flags & O_TMPFILE) == O_TMPFILE) {
      if (uexec_wn_directory(pid, dirfd, ptr, out, n) != 0) return 0;
      return uexec_wn_verdict(forbids, ctx, out, UEXEC_WN_INSIDE);
    }
    const int writes = (flags & (O_WRONLY | O_RDWR | O_TRUNC)) != 0;
    if (uexec_wn_name(pid, dirfd, ptr, !(flags & O_NOFOLLOW), out, n) != 0) return 0;
    struct stat st;
    if (lstat(out, &st) == 0) {
      if ((flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL)) return 0;  /* EEXIST */
      if (S_ISLNK(st.st_mode)) {
        /* O_NOFOLLOW: ELOOP. Otherwise the link dangles (a resolvable one was followed):
         * O_CREAT makes its target, judged there, one link deep; without it the open reads
         * (or fails with ENOENT) where it points. */
        if ((flags & O_NOFOLLOW) || uexec_wn_dangling_target(out, n) != 0) return 0;
        if (!(flags & O_CREAT)) return writes ? 0 : uexec_wn_verdict(forbids, ctx, out, UEXEC_WN_READ);
        if (lstat(out, &st) == 0 || !uexec_wn_creatable(out)) return 0;
        return uexec_wn_verdict(forbids, ctx, out, UEXEC_WN_NAME);
      }
      if (S_ISDIR(st.st_mode) && writes) return 0; /* EISDIR */
      return uexec_wn_verdict(forbids, ctx, out, writes ? UEXEC_WN_FILE : UEXEC_WN_READ);
    }
    if (!(flags & O_CREAT)) /* ENOENT (maybe hidden below a mask), or ENOTDIR: not judged */
      return writes || !uexec_wn_below_directory(out) ? 0 : uexec_wn_verdict(forbids, ctx, out, UEXEC_WN_READ);
    if (!uexec_wn_creatable(out)) return 0;                                                          /* ENOENT */
    return uexec_wn_verdict(forbids, ctx, out, UEXEC_WN_NAME);
  }
  if (nr == SYS_truncate) {
    if (uexec_wn_name(pid, cwd, d->args[0], 1, out, n) != 0 || !uexec_wn_exists(out)) return 0;
    return uexec_wn_verdict(forbids, ctx, out, UEXEC_WN_FILE);
  }
  /* Calls that add a name: it must be absent and its directory there. */
  int dirfd = cwd;
  uint64_t ptr = 0;
  if (nr == SYS_mkdir || nr == SYS_mknod) ptr = d->args[0];
  else if (nr == SYS_mkdirat || nr == SYS_mknodat) dirfd = (int)d->args[0], ptr = d->args[1];
  else if (nr == SYS_symlink) ptr = d->args[1];
  else if (nr == SYS_symlinkat) dirfd = (int)d->args[1], ptr = d->args[2];
  if (ptr) {
    if (uexec_wn_name(pid, dirfd, ptr, 0, out, n) != 0 || uexec_wn_exists(out) || !uexec_wn_creatable(out)) return 0;
    return uexec_wn_verdict(forbids, ctx, out, UEXEC_WN_NAME);
  }
  /* Calls that take a name away: it must be there. */
  if (nr == SYS_unlink || nr == SYS_rmdir) ptr = d->args[0];
  else if (nr == SYS_unlinkat) dirfd = (int)d->args[0], ptr = d->args[1];
  if (ptr) {
    if (uexec_wn_name(pid, dirfd, ptr, 0, out, n) != 0 || !uexec_wn_exists(out)) return 0;
    return uexec_wn_verdict(forbids, ctx, out, UEXEC_WN_NAME);
  }
  /* rename and link: the old name must be there; the new name is judged first (link's old
   * name is not changed), then rename's old one. */
  int old_dirfd = cwd, new_dirfd = cwd;
  uint64_t old_ptr = 0, new_ptr = 0;
  int moves = nr == SYS_rename || nr == SYS_renameat || nr == SYS_renameat2;
  if (nr == SYS_rename || nr == SYS_link) old_ptr = d->args[0], new_ptr = d->args[1];
  else if (nr == SYS_renameat || nr == SYS_renameat2 || nr == SYS_linkat)
    old_dirfd = (int)d->args[0], old_ptr = d->args[1], new_dirfd = (int)d->args[2], new_ptr = d->args[3];
  else
    return 0;
  char old_path[4096];
  int link_follows = nr == SYS_linkat && (d->args[4] & AT_SYMLINK_FOLLOW);
  char first[2];
  int old_is_fd = nr == SYS_linkat && (d->args[4] & AT_EMPTY_PATH) &&
                  uexec_wn_read_string(pid, old_ptr, first, sizeof first) == 0 && first[0] == '\0';
  if (old_is_fd) {
    old_path[0] = '\0'; /* linkat(fd, "", …, AT_EMPTY_PATH): the old file is the fd itself */
  } else if (uexec_wn_name(pid, old_dirfd, old_ptr, link_follows, old_path, sizeof old_path) != 0 ||
             !uexec_wn_exists(old_path)) {
    return 0;
  }
  if (uexec_wn_name(pid, new_dirfd, new_ptr, 0, out, n) != 0) return 0;
  int replaces = uexec_wn_exists(out);
  uint64_t rename_flags = nr == SYS_renameat2 ? d->args[4] : 0;
  int no_replace = !moves || (rename_flags & 1 /* RENAME_NOREPLACE */);
  if (!replaces && (rename_flags & 2 /* RENAME_EXCHANGE */)) return 0;                  /* ENOENT */
  if ((replaces && no_replace) || (!replaces && !uexec_wn_creatable(out))) return 0; /* EEXIST, ENOENT */
  if (forbids(ctx, out, UEXEC_WN_NAME)) return UEXEC_WN_NAME;
  if (!moves || strlen(old_path) >= n) return 0;
  if (!forbids(ctx, old_path, UEXEC_WN_NAME)) return 0;
  memcpy(out, old_path, strlen(old_path) + 1);
  return UEXEC_WN_NAME;
}

UEXEC_SHARED_C_END

#endif
