// loop_fixture.h: a real Loop for integration tests, and probes for what they check.
//
// LoopFixture::run_until runs the loop until a predicate holds or a deadline passes (a
// deadline is a hang guard, never a performance assertion). Its destructor fails the test
// if any libuv handle is still open: every test ends with a leak check.
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>

#include <doctest/doctest.h>

#include "loop/loop.h"
#include "loop/timer.h"

namespace uexec::test {

using namespace std::chrono_literals;

struct LoopFixture {
  loop::Loop loop;

  template <class Pred>
  bool run_until(Pred pred, std::chrono::milliseconds deadline = 20s) {
    bool expired = false;
    {
      loop::Timer guard(loop, loop::Timer::kRealTime);  // also under a manual clock
      guard.start(deadline, [&] { expired = true; });
      // A tick, so predicates on state outside the loop (the kernel's) are looked at too.
      loop::Timer tick(loop, loop::Timer::kRealTime);
      tick.start(std::chrono::milliseconds{10}, [] {}, std::chrono::milliseconds{10});
      while (!pred() && !expired) loop.run_once(true);
    }
    loop.run_once(false);  // let the guard's close callback run
    return pred();
  }

  // Runs the loop for `d` regardless (to let late events arrive).
  void run_for(std::chrono::milliseconds d) {
    run_until([] { return false; }, d);
  }

  ~LoopFixture() {
    for (int i = 0; i < 4; ++i) loop.run_once(false);
    CHECK_MESSAGE(loop.report_open_handles() == 0, "libuv handles leaked");
  }
};

// Path of the scripted child (meson passes it in the environment).
inline std::string pty_child() {
  const char* p = std::getenv("UEXEC_PTY_CHILD");
  REQUIRE_MESSAGE(p != nullptr, "UEXEC_PTY_CHILD is not set");
  return p;
}

inline int count_open_fds() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') ++n;
  ::closedir(d);
  return n - 1;  // the directory's own fd
}

// Children of this process that are zombies (state Z).
inline int count_zombie_children() {
  int n = 0;
  pid_t me = ::getpid();
  DIR* d = ::opendir("/proc");
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream in(std::string("/proc/") + e->d_name + "/stat");
    std::string stat;
    std::getline(in, stat);
    auto rp = stat.rfind(')');
    if (rp == std::string::npos || rp + 4 >= stat.size()) continue;
    char state = stat[rp + 2];
    long ppid = std::strtol(stat.c_str() + rp + 4, nullptr, 10);
    if (ppid == me && state == 'Z') ++n;
  }
  ::closedir(d);
  return n;
}

// The command name of a process ("" when gone).
inline std::string comm_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string c;
  std::getline(in, c);
  return c;
}

// The pattern pty_child writes (keep in sync with helpers/pty_child.cc).
inline char pattern_byte(unsigned long long i) { return static_cast<char>('0' + (i * 7 + i / 4096) % 75); }

}  // namespace uexec::test
