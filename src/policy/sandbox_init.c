// sandbox_init.c: pid 1 of a sandboxed session's pid namespace (uexec-init).
//
// pty/spawn.cc's pid 1 builds the sandbox view, starts the command as pid 2, and then execs
// this program, from a sealed memfd copy taken when the manager started, so that nothing a
// sandbox writes can change the next sandbox's init. It is static and tiny on purpose: a
// sandboxed session costs this process and nothing of the manager's memory.
//
//   argv[1]  the command's pid (in the namespace)
//   fd 3     the status pipe: the command's wait status (an int) is written there at its end
//
// The kernel delivers to a namespace's init only the signals it handles, so every signal a
// manager sends to the session (SIGTERM, SIGINT, SIGHUP, …) is caught here and forwarded to
// the command's process group. SIGKILL is not caught: it kills init, and with it the whole
// namespace, which is how the manager tears a sandbox down. When the command exits, init
// writes its status and exits; the kernel then kills every process left in the namespace
// (setsid and double-fork escapees included) and reaps them.
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile pid_t command_pid = 0;

static void forward(int sig) {
  int saved = errno;
  if (kill(-command_pid, sig) < 0) kill(command_pid, sig);
  errno = saved;
}

int main(int argc, char** argv) {
  if (argc < 2) return 125;
  command_pid = (pid_t)atoi(argv[1]);
  if (command_pid <= 1) return 125;

  static const int forwarded[] = {SIGHUP, SIGINT,  SIGQUIT, SIGTERM, SIGUSR1,
                                  SIGUSR2, SIGALRM, SIGCONT, SIGWINCH, SIGPIPE};
  struct sigaction sa = {0};
  sa.sa_handler = forward;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (unsigned i = 0; i < sizeof forwarded / sizeof forwarded[0]; ++i) sigaction(forwarded[i], &sa, 0);

  for (;;) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      return 125;  // ECHILD before the command was seen: cannot happen, but never spin
    }
    if (pid != command_pid) continue;  // a reparented orphan: reaped, nothing more
    ssize_t n;
    do {
      n = write(3, &status, sizeof status);
    } while (n < 0 && errno == EINTR);
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
  }
}
