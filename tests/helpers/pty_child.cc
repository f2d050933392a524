// pty_child.cc: the scripted child the integration tests run on real PTYs and pipes.
//
// usage: pty_child MODE [ARGS]
//   burst N             write N bytes of the test pattern (printable, no newline), exit 0
//   exit-fast CODE N    write N pattern bytes as fast as possible, then exit CODE at once
//   ignore-hup          ignore SIGHUP and SIGTERM, print "ready", sleep until killed
//   utf8-split          write "€" (E2 82 AC) as E2 | 82 AC in two writes 50 ms apart
//   print-winsize       print "size R C" now and after every SIGWINCH; exit on stdin EOF
//   print-tty           print isatty, ttyname, sid==pid, pgrp==pid, tcgetpgrp==pid
//   print-fds           print the open fds, e.g. "fds: 0 1 2"
//   print-signals       print the blocked and ignored signal masks from /proc/self/status
//   print-env           print the environment, one entry a line
//   grandchild-holds    fork a grandchild that keeps the tty 30 s; print "gc PID" and exit 0
//   kill-self SIG       raise signal SIG
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

extern char** environ;

namespace {

// The pattern both this child and the tests generate: byte i is 'A' + (i % 53) mapped into
// printable ASCII, so cooked output processing (ONLCR) leaves it unchanged.
char pattern_byte(unsigned long long i) { return static_cast<char>('0' + (i * 7 + i / 4096) % 75); }

void write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      std::_Exit(3);
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void write_pattern(unsigned long long n) {
  std::vector<char> buf(64 * 1024);
  unsigned long long i = 0;
  while (i < n) {
    std::size_t chunk = static_cast<std::size_t>(std::min<unsigned long long>(buf.size(), n - i));
    for (std::size_t k = 0; k < chunk; ++k) buf[k] = pattern_byte(i + k);
    write_all(1, buf.data(), chunk);
    i += chunk;
  }
}

void print(const std::string& s) { write_all(1, s.data(), s.size()); }

volatile sig_atomic_t g_winch = 0;

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: pty_child MODE [ARGS]\n");
    return 2;
  }
  std::string mode = argv[1];
  if (mode == "burst" && argc == 3) {
    write_pattern(std::strtoull(argv[2], nullptr, 10));
    return 0;
  }
  if (mode == "exit-fast" && argc == 4) {
    write_pattern(std::strtoull(argv[3], nullptr, 10));
    std::_Exit(std::atoi(argv[2]));
  }
  if (mode == "ignore-hup") {
    ::signal(SIGHUP, SIG_IGN);
    ::signal(SIGTERM, SIG_IGN);
    print("ready\n");
    for (;;) ::pause();
  }
  if (mode == "utf8-split") {
    print("\xE2");
    ::usleep(50 * 1000);
    print("\x82\xAC\n");
    return 0;
  }
  if (mode == "print-winsize") {
    struct sigaction sa {};
    sa.sa_handler = [](int) { g_winch = 1; };
    ::sigaction(SIGWINCH, &sa, nullptr);  // no SA_RESTART: read() returns EINTR
    auto report = [] {
      winsize ws{};
      ::ioctl(0, TIOCGWINSZ, &ws);
      print("size " + std::to_string(ws.ws_row) + " " + std::to_string(ws.ws_col) + "\n");
    };
    report();
    // Poll with a short timeout rather than block in read(): a SIGWINCH landing between
    // the check and a blocking read would otherwise wait for the next keystroke.
    char c;
    for (;;) {
      if (g_winch) {
        g_winch = 0;
        report();
      }
      pollfd p{0, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      ssize_t n = ::read(0, &c, 1);
      if (n == 0 || (n < 0 && errno != EINTR)) return 0;
    }
  }
  if (mode == "print-tty") {
    const char* name = ::ttyname(0);
    pid_t me = ::getpid();
    print(std::string("isatty=") + (::isatty(0) ? "1" : "0") + " tty=" + (name ? name : "none") +
          " sid=" + (::getsid(0) == me ? "self" : "other") + " pgrp=" + (::getpgrp() == me ? "self" : "other") +
          " fg=" + (::tcgetpgrp(0) == me ? "self" : "other") + "\n");
    return 0;
  }
  if (mode == "print-fds") {
    DIR* d = ::opendir("/proc/self/fd");
    if (!d) return 4;
    std::vector<int> fds;
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      int fd = std::atoi(e->d_name);
      if (fd != ::dirfd(d)) fds.push_back(fd);
    }
    ::closedir(d);
    std::string out = "fds:";
    for (int fd : fds) out += " " + std::to_string(fd);
    print(out + "\n");
    return 0;
  }
  if (mode == "print-signals") {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("SigBlk:", 0) == 0 || line.rfind("SigIgn:", 0) == 0) print(line + "\n");
    return 0;
  }
  if (mode == "print-env") {
    for (char** e = environ; *e; ++e) print(std::string(*e) + "\n");
    return 0;
  }
  if (mode == "grandchild-holds") {
    // Survive the hang-up when we exit: only the test's kill ends the grandchild. Ignored
    // before the fork, or our exit's SIGHUP can reach it before it runs at all.
    ::signal(SIGHUP, SIG_IGN);
    pid_t gc = ::fork();
    if (gc == 0) {
      ::sleep(30);
      std::_Exit(0);
    }
    print("gc " + std::to_string(gc) + "\n");
    return 0;
  }
  if (mode == "kill-self" && argc == 3) {
    ::raise(std::atoi(argv[2]));
    ::pause();
    return 0;
  }
  std::fprintf(stderr, "pty_child: unknown mode %s\n", mode.c_str());
  return 2;
}
