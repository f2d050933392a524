/* supervisor_protocol.h: what a sandbox's pid 1 (uexec-init, C) tells the manager (C++).
 *
 * One pipe, init's fd 3, read by the manager once init has been reaped: zero or more DENY
 * records (seccomp calls init answered with EPERM, aggregated by syscall and key argument,
 * at most UEXEC_SUP_MAX_RECORDS), then one STAT record with the command's wait status.
 * Fixed-size, native-endian: both ends are built from this tree for this machine.
 *
 * The other way, on init's fd 5 (a datagram socket): mask requests, one per datagram, a
 * type byte ('f' file, 'd' directory) followed by an absolute path (no NUL). init mounts an
 * empty mode-000 file or directory over the path in the sandbox's view, opened without
 * following symlinks; the deny-read files that appear after launch are masked this way.
 */
#ifndef UEXEC_PTY_SUPERVISOR_PROTOCOL_H
#define UEXEC_PTY_SUPERVISOR_PROTOCOL_H

#include <stdint.h>

#define UEXEC_SUP_DENY 0x594e4544u /* "DENY" */
#define UEXEC_SUP_STAT 0x54415453u /* "STAT" */
#define UEXEC_SUP_MAX_RECORDS 64
#define UEXEC_SUP_MAX_MASK_PATH 4096

struct uexec_sup_record {
  uint32_t type;    /* UEXEC_SUP_DENY or UEXEC_SUP_STAT */
  int32_t nr;       /* DENY: the syscall number */
  uint32_t arch;    /* DENY: its AUDIT_ARCH */
  int32_t pid;      /* DENY: the first caller, in the sandbox's pid namespace */
  uint32_t count;   /* DENY: how many calls matched */
  int32_t status;   /* STAT: the command's wait status */
  uint64_t args[3]; /* DENY: the first three arguments of the first call */
};

#endif
