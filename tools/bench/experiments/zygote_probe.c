// probe: run under the zygote; reports what the sandboxed child sees.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <linux/filter.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>
int main(void) {
  int r = unshare(CLONE_NEWNET);
  printf("probe: unshare(CLONE_NEWNET) = %d errno %s\n", r, r ? strerror(errno) : "-");
  struct sock_filter f[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
  struct sock_fprog p = {1, f};
  long l = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &p);
  printf("probe: own seccomp NEW_LISTENER = %ld errno %s\n", l, l < 0 ? strerror(errno) : "-");
  long c = syscall(435 /* clone3 */, NULL, 0);
  printf("probe: clone3 = %ld errno %s\n", c, c < 0 ? strerror(errno) : "-");
  printf("probe: pid %d ppid %d sid %d tcgetsid(0) %d tcgetpgrp(0) %d isatty(0) %d\n", getpid(), getppid(), getsid(0),
         tcgetsid(0), tcgetpgrp(0), isatty(0));
  int fd = open("/etc/hostname", O_RDONLY);
  printf("probe: read-open /etc/hostname %s; ", fd >= 0 ? "ok" : strerror(errno));
  fd = open("/etc/zyg-probe", O_WRONLY | O_CREAT, 0644);
  printf("create /etc/zyg-probe %s\n", fd >= 0 ? "ALLOWED(bad)" : strerror(errno));
  fflush(stdout);
  return 0;
}
