// Unit tests for base and pty vocabulary: Result, Error messages, exit status, signal names.
#include <doctest/doctest.h>
#include <signal.h>

#include <string>
#include <vector>

#include "base/result.h"
#include "loop/loop.h"
#include "loop/timer.h"
#include "rpc/json_depth.h"
#include "pty/exit_status.h"
#include "pty/spawn.h"

using namespace uexec;

TEST_CASE("Error::message names the step, the errno text and its name") {
  base::Error e{base::Errc::kExecFailed, ENOENT, "execve /nonexistent"};
  CHECK(e.message() == "execve /nonexistent: No such file or directory (ENOENT)");
  base::Result<int> r = e;
  CHECK(!r);
  CHECK(r.error().sys_errno == ENOENT);
  base::Result<int> ok = 5;
  CHECK(*ok == 5);
}

TEST_CASE("exit status: shell codes and descriptions") {
  pty::ExitStatus term{0, SIGTERM, false};
  CHECK(term.shell_code() == 143);
  CHECK(term.describe() == "signal SIGTERM");
  pty::ExitStatus kill{0, SIGKILL, false};
  CHECK(kill.shell_code() == 137);
  pty::ExitStatus seven{7, 0, false};
  CHECK(seven.shell_code() == 7);
  CHECK(seven.describe() == "exit 7");
}

TEST_CASE("signal names both ways") {
  CHECK(pty::signal_from_name("SIGINT") == SIGINT);
  CHECK(pty::signal_from_name("term") == SIGTERM);
  CHECK(pty::signal_from_name("9") == 9);
  CHECK(pty::signal_from_name("SIGNOPE") == 0);
  CHECK(pty::signal_from_name("99999") == 0);
  CHECK(pty::signal_name(SIGHUP) == "SIGHUP");
}

TEST_CASE("resolve_program looks up the child's PATH and tells ENOENT from EACCES") {
  auto sh = pty::resolve_program("sh", {"PATH=/nonexistent-dir:/bin"}, "");
  REQUIRE(sh);
  CHECK(*sh == "/bin/sh");
  auto missing = pty::resolve_program("definitely-not-a-program-xyz", {"PATH=/bin"}, "");
  REQUIRE(!missing);
  CHECK(missing.error().sys_errno == ENOENT);
  auto with_slash = pty::resolve_program("./x", {}, "");
  CHECK(*with_slash == "./x");
}

TEST_CASE("manual clock: timers fire in due order at their exact times, repeat, stop and re-arm") {
  loop::Loop loop;
  auto& clock = loop.use_manual_clock();
  std::vector<std::string> fired;
  loop::Timer a(loop), b(loop), r(loop), gone(loop);
  a.start(std::chrono::milliseconds{30}, [&] { fired.push_back("a@" + std::to_string(clock.now().count())); });
  b.start(std::chrono::milliseconds{10}, [&] {
    fired.push_back("b@" + std::to_string(clock.now().count()));
    b.start(std::chrono::milliseconds{5}, [&] { fired.push_back("b2@" + std::to_string(clock.now().count())); });
  });
  r.start(std::chrono::milliseconds{20}, [&] { fired.push_back("r@" + std::to_string(clock.now().count())); },
          std::chrono::milliseconds{20});
  gone.start(std::chrono::milliseconds{1}, [&] { fired.push_back("gone"); });
  gone.stop();
  CHECK(a.active());
  clock.advance(std::chrono::milliseconds{9});
  CHECK(fired.empty());
  clock.advance(std::chrono::milliseconds{41});
  CHECK(fired == std::vector<std::string>{"b@10", "b2@15", "r@20", "a@30", "r@40"});
  CHECK(clock.now() == std::chrono::milliseconds{50});
  CHECK_FALSE(a.active());
  CHECK(r.active());
  r.stop();
  clock.advance(std::chrono::milliseconds{100});
  CHECK(fired.size() == 5);
}

TEST_CASE("JSON nesting depth is counted before parsing; brackets inside strings do not count") {
  using uexec::rpc::json_nested_deeper_than;
  CHECK_FALSE(json_nested_deeper_than(R"({"a":[1,{"b":[]}]})", 4));
  CHECK(json_nested_deeper_than(R"({"a":[1,{"b":[]}]})", 3));
  CHECK_FALSE(json_nested_deeper_than(R"({"s":"[[[[[[\"[[[["})", 1));
  CHECK(json_nested_deeper_than(std::string(100000, '['), 64));
}
