// ProcessManager: ids, many cycles without leaks, shutdown.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>

#include "integration/session_helpers.h"

using namespace uexec;
using namespace uexec::test;

TEST_CASE("200 spawn/exit cycles leave no zombie and no extra fd") {
  int fds_before;
  {
    ManagerFixture f;
    // Warm up: the first spawn creates the thread's child stack and the loop's internals.
    auto& warm = f.start(request({"/bin/true"}));
    REQUIRE(f.wait_finished(warm));
    f.pm->remove(warm.id());
    f.run_for(std::chrono::milliseconds{5});
    fds_before = count_open_fds();
    for (int i = 0; i < 200; ++i) {
      auto& s = f.start(request({"/bin/echo", std::to_string(i)}, i % 2 == 0));
      REQUIRE(f.wait_finished(s));
      CHECK(s.verdict()->status.code == 0);
      f.pm->remove(s.id());
    }
    f.run_for(std::chrono::milliseconds{5});
    CHECK(f.pm->size() == 0);
    CHECK(count_zombie_children() == 0);
    CHECK(count_open_fds() == fds_before);
  }
}

TEST_CASE("ids: chosen by the caller or allocated; a duplicate is refused") {
  ManagerFixture f;
  auto req = request({"/bin/sleep", "5"});
  req.id = "devserver";
  auto a = f.pm->start(req);
  REQUIRE(a);
  CHECK(*a == "devserver");
  auto dup = f.pm->start(req);
  REQUIRE(!dup);
  CHECK(dup.error().code == base::Errc::kInvalidArgument);
  auto b = f.pm->start(request({"/bin/sleep", "5"}));
  REQUIRE(b);
  CHECK(*b != "devserver");
  CHECK(f.pm->size() == 2);
}

TEST_CASE("destroying the manager kills and reaps running children") {
  pid_t pid;
  {
    ManagerFixture f;
    auto& s = f.start(request({"/bin/sleep", "100"}));
    pid = s.pid();
    CHECK(::kill(pid, 0) == 0);
  }
  CHECK(::kill(pid, 0) == -1);  // reaped: the pid is gone, no zombie left
  CHECK(count_zombie_children() == 0);
}

TEST_CASE("terminate_all ends a running interactive shell") {
  base::Config cfg;
  cfg.terminate_grace = std::chrono::milliseconds{300};
  ManagerFixture f(cfg);
  auto req = request({"/bin/bash", "--norc", "--noprofile", "-i"});
  req.env = std::vector<std::string>{"PS1=$ ", "PATH=/usr/bin:/bin"};
  auto& s = f.start(req);
  REQUIRE(f.wait_output(s, "$ "));
  f.pm->terminate_all();
  REQUIRE(f.wait_finished(s));
  CHECK(s.verdict()->status.signal != 0);
}

TEST_CASE("a child reaped elsewhere in the process ends its session (status lost) instead of spinning") {
  ManagerFixture f;
  auto& s = f.start(request({"/bin/sh", "-c", "exit 3"}));
  int status = 0;
  REQUIRE(::waitpid(s.pid(), &status, 0) == s.pid());  // another waiter in this process took it
  REQUIRE(f.wait_finished(s));
  CHECK(s.verdict()->status.code == 255);
  CHECK(s.verdict()->status.signal == 0);
  f.pm->remove(s.id());
  CHECK(count_zombie_children() == 0);
}
